import NIOCore
import NIOHTTP1

/// HTTP/1.1 heads written straight into a `ByteBuffer`: no encoder handler, no `NIOAny` per part.
/// Every value written comes from a parser that refused CR, LF and other controls, or from Gatehouse.
enum HTTPHeadWriter {
    /// The whole answer to a request the decoder refused (400, 431): empty, and the connection closes.
    static func refusal(_ status: HTTPResponseStatus, allocator: ByteBufferAllocator) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: 96)
        writeStatusLine(version: .http1_1, code: Int(status.code), into: &buffer)
        buffer.writeString(status.reasonPhrase)
        buffer.writeStaticString("\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
        return buffer
    }

    /// The head of an answer Gatehouse gives itself (401, 403, 503, 400, endpoints): its fields,
    /// then the framing, request id and connection fields, written once (any of those three in
    /// `headers` is left out).
    static func localResponseHead(
        status: HTTPResponseStatus, version: HTTPVersion, headers: HTTPHeaders, contentLength: Int, requestID: String, keepAlive: Bool,
        allocator: ByteBufferAllocator
    ) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: 512 + contentLength)
        writeStatusLine(version: version, code: Int(status.code), into: &buffer)
        buffer.writeString(status.reasonPhrase)
        buffer.writeStaticString("\r\n")
        for (name, value) in headers where !isWrittenByGatehouse(name) {
            writeField(name, value, into: &buffer)
        }
        buffer.writeStaticString("Content-Length: ")
        buffer.writeString(String(contentLength))
        buffer.writeStaticString("\r\nX-Request-Id: ")
        buffer.writeString(requestID)
        buffer.writeStaticString("\r\n")
        if !keepAlive {
            buffer.writeStaticString("Connection: close\r\n")
        } else if version.minor == 0 {
            buffer.writeStaticString("Connection: keep-alive\r\n")
        }
        buffer.writeStaticString("\r\n")
        return buffer
    }

    private static func isWrittenByGatehouse(_ name: String) -> Bool {
        name.utf8.elementsEqualIgnoringASCIICase("connection".utf8) || name.utf8.elementsEqualIgnoringASCIICase("x-request-id".utf8)
            || name.utf8.elementsEqualIgnoringASCIICase("content-length".utf8)
    }

    /// What the client gets of an upstream head: its status and reason, every field relayed as
    /// received except hop-by-hop ones, the upstream's `X-Request-Id` and `Content-Length` (written
    /// once, normalised), then Gatehouse's own.
    static func relayedResponseHead(
        _ upstream: UpstreamResponseHead, version: HTTPVersion, requestID: String, extraFields: RelayedFields,
        allocator: ByteBufferAllocator
    ) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: upstream.bytes.readableBytes + 96)
        writeStatusLine(version: version, code: upstream.status, into: &buffer)
        let base = upstream.bytes.readerIndex
        buffer.writeImmutableBuffer(upstream.bytes.getSlice(at: base + upstream.reason.lowerBound, length: upstream.reason.count)!)  // safe: within the head
        buffer.writeStaticString("\r\n")
        for field in upstream.fields where upstream.isRelayed(field) {
            buffer.writeImmutableBuffer(upstream.bytes.getSlice(at: base + field.line.lowerBound, length: field.line.count)!)  // safe: within the head
            buffer.writeStaticString("\r\n")
        }
        if let length = upstream.relayedContentLength {
            buffer.writeStaticString("Content-Length: ")
            buffer.writeString(String(length))
            buffer.writeStaticString("\r\n")
        }
        buffer.writeStaticString("X-Request-Id: ")
        buffer.writeString(requestID)
        buffer.writeStaticString("\r\n")
        if extraFields.contains(.chunked) { buffer.writeStaticString("Transfer-Encoding: chunked\r\n") }
        if extraFields.contains(.webSocketUpgrade) { buffer.writeStaticString("Upgrade: websocket\r\nConnection: upgrade\r\n") }
        if extraFields.contains(.connectionClose) { buffer.writeStaticString("Connection: close\r\n") }
        if extraFields.contains(.connectionKeepAlive) { buffer.writeStaticString("Connection: keep-alive\r\n") }
        buffer.writeStaticString("\r\n")
        return buffer
    }

    /// Fields Gatehouse adds to a relayed head.
    struct RelayedFields: OptionSet {
        let rawValue: UInt8
        static let chunked = RelayedFields(rawValue: 1)
        static let connectionClose = RelayedFields(rawValue: 2)
        /// For an HTTP/1.0 client whose connection stays open.
        static let connectionKeepAlive = RelayedFields(rawValue: 4)
        static let webSocketUpgrade = RelayedFields(rawValue: 8)
    }

    private static func writeStatusLine(version: HTTPVersion, code: Int, into buffer: inout ByteBuffer) {
        buffer.writeStaticString(version.minor == 0 ? "HTTP/1.0 " : "HTTP/1.1 ")
        buffer.writeInteger(UInt8(ascii: "0") + UInt8(code / 100 % 10))
        buffer.writeInteger(UInt8(ascii: "0") + UInt8(code / 10 % 10))
        buffer.writeInteger(UInt8(ascii: "0") + UInt8(code % 10))
        buffer.writeInteger(ASCIIByte.space)
    }

    static func writeField(_ name: String, _ value: String, into buffer: inout ByteBuffer) {
        buffer.writeString(name)
        buffer.writeStaticString(": ")
        buffer.writeString(value)
        buffer.writeStaticString("\r\n")
    }
}
