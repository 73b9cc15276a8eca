public import NIOCore
public import NIOHTTP1
import GatehouseSyntax

/// HTTP/1.1 heads written straight into a `ByteBuffer`: no encoder handler, no `NIOAny` per part.
/// Every value written comes from a parser that refused CR, LF and other controls, or from Gatehouse.
public enum HTTPHeadWriter {
    /// The whole answer to a request the decoder refused (400, 431): empty, and the connection closes.
    public static func refusal(_ status: HTTPResponseStatus, allocator: ByteBufferAllocator) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: 96)
        writeStatusLine(version: .http1_1, code: Int(status.code), into: &buffer)
        buffer.writeString(status.reasonPhrase)
        buffer.writeStaticString("\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
        return buffer
    }

    /// A response head for an HTTP/1.x client, in the version it spoke, with the framing and connection fields
    /// its door chose (`extraFields`).
    public static func clientResponseHead(
        _ head: ClientResponseHead, version: HTTPVersion, extraFields: RelayedFields, allocator: ByteBufferAllocator
    ) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: estimatedSize(of: head))
        writeClientResponseHead(head, version: version, extraFields: extraFields, into: &buffer)
        return buffer
    }

    /// `clientResponseHead`, appended to `buffer` (a connection's `ReusedBuffer`: no allocation once warm).
    public static func writeClientResponseHead(
        _ head: ClientResponseHead, version: HTTPVersion, extraFields: RelayedFields, into buffer: inout ByteBuffer
    ) {
        switch head {
        case .relayed(let upstream, let requestID):
            writeRelayedResponseHead(upstream, version: version, requestID: requestID, extraFields: extraFields, into: &buffer)
        case .fields(let head):
            writeFieldsResponseHead(head, version: version, extraFields: extraFields, into: &buffer)
        case .http2:
            writeFieldsResponseHead(head.asFields, version: version, extraFields: extraFields, into: &buffer)
        }
    }

    /// Room for the head without regrowth: a relayed head's bytes and Gatehouse's fields, or a margin for fields.
    public static func estimatedSize(of head: ClientResponseHead) -> Int {
        switch head {
        case .relayed(let upstream, _): upstream.bytes.readableBytes + 96
        case .fields, .http2: 512
        }
    }

    /// A head given as fields (an answer Gatehouse made, an HTTP/2 upstream's): its fields, then `Content-Length`
    /// and the request id, written once as a relayed head has them, then the framing and connection fields,
    /// which are Gatehouse's to write (`extraFields`).
    static func writeFieldsResponseHead(_ head: HTTPResponseHead, version: HTTPVersion, extraFields: RelayedFields, into buffer: inout ByteBuffer) {
        writeStatusLine(version: version, code: Int(head.status.code), into: &buffer)
        buffer.writeString(head.status.reasonPhrase)
        buffer.writeStaticString("\r\n")
        var contentLength: String?
        var requestID: String?
        for (name, value) in head.headers {
            if name.utf8.elementsEqualIgnoringASCIICase("content-length".utf8) {
                contentLength = value
            } else if name.utf8.elementsEqualIgnoringASCIICase(RequestIDField.name.utf8) {
                requestID = value
            } else if !HopByHopFields.contains(name.utf8) {
                writeField(name, value, into: &buffer)
            }
        }
        if let contentLength { writeField("Content-Length", contentLength, into: &buffer) }
        if let requestID { writeField(RequestIDField.writtenName, requestID, into: &buffer) }
        writeExtraFields(extraFields, into: &buffer)
    }

    /// What the client gets of an upstream head: its status and reason, every field relayed as
    /// received except hop-by-hop ones, the upstream's `X-Request-Id` and `Content-Length` (written
    /// once, normalised), then Gatehouse's own.
    static func writeRelayedResponseHead(
        _ upstream: UpstreamResponseHead, version: HTTPVersion, requestID: String, extraFields: RelayedFields,
        into buffer: inout ByteBuffer
    ) {
        writeStatusLine(version: version, code: upstream.status, into: &buffer)
        // Copied from the received bytes as they lie, without a slice of them per field (each a reference).
        upstream.bytes.withUnsafeReadableBytes { received in
            writeBytes(upstream.reason, of: received, into: &buffer)
            buffer.writeStaticString("\r\n")
            for field in upstream.fields where upstream.isRelayed(field) {
                writeBytes(field.line, of: received, into: &buffer)
                buffer.writeStaticString("\r\n")
            }
        }
        if let length = upstream.relayedContentLength {
            buffer.writeStaticString("Content-Length: ")
            buffer.writeString(String(length))
            buffer.writeStaticString("\r\n")
        }
        buffer.writeStaticString("X-Request-Id: ")
        buffer.writeString(requestID)
        buffer.writeStaticString("\r\n")
        writeExtraFields(extraFields, into: &buffer)
    }

    /// The bytes of `range` in `received`. The parser's ranges lie within the head it read (`UpstreamResponseHeadParser`);
    /// checked all the same, as an unsafe buffer's slice is not in a release build: a range outside writes nothing.
    private static func writeBytes(_ range: Range<Int>, of received: UnsafeRawBufferPointer, into buffer: inout ByteBuffer) {
        guard range.lowerBound >= 0, range.upperBound <= received.count else { return }
        buffer.writeBytes(UnsafeRawBufferPointer(rebasing: received[range]))
    }

    /// Gatehouse's framing and connection fields, and the blank line that ends the head.
    private static func writeExtraFields(_ extraFields: RelayedFields, into buffer: inout ByteBuffer) {
        if extraFields.contains(.chunked) { buffer.writeStaticString("Transfer-Encoding: chunked\r\n") }
        if extraFields.contains(.webSocketUpgrade) { buffer.writeStaticString("Upgrade: websocket\r\nConnection: upgrade\r\n") }
        if extraFields.contains(.connectionClose) { buffer.writeStaticString("Connection: close\r\n") }
        if extraFields.contains(.connectionKeepAlive) { buffer.writeStaticString("Connection: keep-alive\r\n") }
        buffer.writeStaticString("\r\n")
    }

    /// Fields Gatehouse adds to a relayed head.
    public struct RelayedFields: OptionSet, Sendable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        public static let chunked = RelayedFields(rawValue: 1)
        public static let connectionClose = RelayedFields(rawValue: 2)
        /// For an HTTP/1.0 client whose connection stays open.
        public static let connectionKeepAlive = RelayedFields(rawValue: 4)
        public static let webSocketUpgrade = RelayedFields(rawValue: 8)
    }

    private static func writeStatusLine(version: HTTPVersion, code: Int, into buffer: inout ByteBuffer) {
        buffer.writeStaticString(version.minor == 0 ? "HTTP/1.0 " : "HTTP/1.1 ")
        buffer.writeInteger(UInt8(ascii: "0") + UInt8(code / 100 % 10))
        buffer.writeInteger(UInt8(ascii: "0") + UInt8(code / 10 % 10))
        buffer.writeInteger(UInt8(ascii: "0") + UInt8(code % 10))
        buffer.writeInteger(ASCIIByte.space)
    }

    @inlinable public static func writeField(_ name: String, _ value: String, into buffer: inout ByteBuffer) {
        buffer.writeString(name)
        buffer.writeStaticString(": ")
        buffer.writeString(value)
        buffer.writeStaticString("\r\n")
    }

    /// `writeField` with the value's bytes (a claim's text as signed: no `String` made of it).
    @inlinable public static func writeField(_ name: String, bytes value: UnsafeBufferPointer<UInt8>, into buffer: inout ByteBuffer) {
        buffer.writeString(name)
        buffer.writeStaticString(": ")
        buffer.writeBytes(value)
        buffer.writeStaticString("\r\n")
    }
}
