import NIOCore
import NIOHTTP1

/// Reads the field lines of a head or trailer section whose line endings were already checked
/// (every CR is followed by LF): `name ":" OWS value OWS CRLF`, up to the empty line that ends it.
/// Names are tokens, values hold no control bytes, obs-fold is refused (RFC 9112 §5.2 allows that).
struct FieldReader {
    let bytes: UnsafeRawBufferPointer

    /// The fields in order, and what the framing rules need to know of them.
    struct Fields {
        var list: [(String, String)] = []
        var contentLengthCount = 0
        var contentLength = 0
        var transferEncodingCount = 0
        var transferEncodingIsChunked = false
        var hasUpgrade = false
        /// `Connection: close` or `Proxy-Connection: close` (which llhttp honoured like `Connection`;
        /// NIO's keep-alive reading of a head looks at `Connection` only).
        var connectionCloses = false
        /// A connection field ending in a tab, which llhttp does not read as `keep-alive`.
        var connectionEndsInTab = false

        /// Whether another request may follow: HTTP/1.1 unless told to close, HTTP/1.0 only with a
        /// readable `keep-alive`.
        func keepsConnection(_ head: HTTPRequestHead) -> Bool {
            head.isKeepAlive && !connectionCloses && !(head.version == .http1_0 && connectionEndsInTab)
        }

        /// RFC 9112 §6: one `Content-Length` of digits, or `Transfer-Encoding: chunked` alone (never
        /// with a length, never twice, never on HTTP/1.0, no other coding: Gatehouse re-frames bodies).
        func framing(version: HTTPVersion) throws(HTTPParserError) -> RequestBodyFraming {
            if transferEncodingCount > 0 {
                guard contentLengthCount == 0 else { throw .unexpectedContentLength }
                guard transferEncodingCount == 1, transferEncodingIsChunked, version == .http1_1 else { throw .invalidHeaderToken }
                return .chunked
            }
            guard contentLengthCount <= 1 else { throw .unexpectedContentLength }
            return contentLength > 0 ? .length(contentLength) : .none
        }
    }

    /// The index of the CR ending the line that starts at `start`.
    func lineEnd(from start: Int) -> Int {
        var index = start
        while bytes[index] != ASCIIByte.carriageReturn { index += 1 }
        return index
    }

    /// The field lines from `start` to the section's closing empty line.
    mutating func readFields(from start: Int) throws(HTTPParserError) -> Fields {
        var fields = Fields()
        fields.list.reserveCapacity(16)  // one allocation for a typical request's fields
        var lineStart = start
        let sectionEnd = bytes.count - 2  // the closing CRLF
        while lineStart < sectionEnd {
            let end = lineEnd(from: lineStart)
            try readField(lineStart, end, into: &fields)
            lineStart = end + 2
        }
        return fields
    }

    private func readField(_ start: Int, _ end: Int, into fields: inout Fields) throws(HTTPParserError) {
        var colon = start
        while colon < end, ASCIIByte.isTokenByte(bytes[colon]) { colon += 1 }
        // An empty name, a space before the colon, or a line starting with whitespace (obs-fold).
        guard colon > start, colon < end, bytes[colon] == ASCIIByte.colon else { throw .invalidHeaderToken }
        var valueStart = colon + 1
        var valueEnd = end
        while valueStart < valueEnd, Self.isOptionalWhitespace(bytes[valueStart]) { valueStart += 1 }
        while valueEnd > valueStart, Self.isOptionalWhitespace(bytes[valueEnd - 1]) { valueEnd -= 1 }
        for index in valueStart..<valueEnd where !ASCIIByte.isFieldValueByte(bytes[index]) { throw .invalidHeaderToken }
        let name = UnsafeRawBufferPointer(rebasing: bytes[start..<colon])
        let value = UnsafeRawBufferPointer(rebasing: bytes[valueStart..<valueEnd])
        // A tab after the value of a framing or connection field is where parsers part ways (llhttp
        // refuses `Content-Length: 5<TAB>` and does not read `chunked<TAB>` or `keep-alive<TAB>`).
        let trailingTab = bytes[valueEnd..<end].contains(ASCIIByte.tab)
        try noteFraming(name, value, trailingTab: trailingTab, in: &fields)
        fields.list.append((String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
    }

    private func noteFraming(_ name: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer, trailingTab: Bool, in fields: inout Fields)
        throws(HTTPParserError)
    {
        if name.elementsEqualIgnoringASCIICase(Self.contentLength) {
            guard !trailingTab else { throw .invalidContentLength }
            fields.contentLengthCount += 1
            fields.contentLength = try Self.contentLengthValue(value)
        } else if name.elementsEqualIgnoringASCIICase(Self.transferEncoding) {
            guard !trailingTab else { throw .invalidHeaderToken }
            fields.transferEncodingCount += 1
            fields.transferEncodingIsChunked = value.elementsEqualIgnoringASCIICase(Self.chunked)
        } else if name.elementsEqualIgnoringASCIICase(Self.upgrade) {
            fields.hasUpgrade = true
        } else if name.elementsEqualIgnoringASCIICase(Self.connection) || name.elementsEqualIgnoringASCIICase(Self.proxyConnection) {
            fields.connectionCloses = fields.connectionCloses || Self.listContainsClose(value)
            fields.connectionEndsInTab = fields.connectionEndsInTab || trailingTab
        }
    }

    /// 1*DIGIT, at most 18 of them (no sign, no list, no overflow).
    private static func contentLengthValue(_ value: UnsafeRawBufferPointer) throws(HTTPParserError) -> Int {
        guard !value.isEmpty, value.count <= 18 else { throw .invalidContentLength }
        var length = 0
        for byte in value {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { throw .invalidContentLength }
            length = length * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return length
    }

    /// Whether a comma-separated list holds the token `close` (any case, OWS around elements).
    private static func listContainsClose(_ value: UnsafeRawBufferPointer) -> Bool {
        var start = 0
        while start <= value.count {
            var end = start
            while end < value.count, value[end] != ASCIIByte.comma { end += 1 }
            var elementStart = start
            var elementEnd = end
            while elementStart < elementEnd, isOptionalWhitespace(value[elementStart]) { elementStart += 1 }
            while elementEnd > elementStart, isOptionalWhitespace(value[elementEnd - 1]) { elementEnd -= 1 }
            if UnsafeRawBufferPointer(rebasing: value[elementStart..<elementEnd]).elementsEqualIgnoringASCIICase(close) { return true }
            start = end + 1
        }
        return false
    }

    static func isOptionalWhitespace(_ byte: UInt8) -> Bool {
        byte == ASCIIByte.space || byte == ASCIIByte.tab
    }

    private static let contentLength = Array("content-length".utf8)
    private static let transferEncoding = Array("transfer-encoding".utf8)
    private static let chunked = Array("chunked".utf8)
    private static let upgrade = Array("upgrade".utf8)
    private static let connection = Array("connection".utf8)
    private static let proxyConnection = Array("proxy-connection".utf8)
    private static let close = Array("close".utf8)
}

/// The request methods llhttp knows (Gatehouse refuses any other, as it did with llhttp), common ones first.
enum RequestMethods {
    private static let table: [([UInt8], HTTPMethod)] = [
        "GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH", "CONNECT", "TRACE", "COPY", "LOCK", "MKCOL", "MOVE",
        "PROPFIND", "PROPPATCH", "SEARCH", "UNLOCK", "BIND", "REBIND", "UNBIND", "ACL", "REPORT", "MKACTIVITY", "CHECKOUT",
        "MERGE", "M-SEARCH", "NOTIFY", "SUBSCRIBE", "UNSUBSCRIBE", "PURGE", "MKCALENDAR", "LINK", "UNLINK", "SOURCE", "QUERY",
    ].map { (Array($0.utf8), HTTPMethod(rawValue: $0)) }

    static func method(_ bytes: UnsafeRawBufferPointer) -> HTTPMethod? {
        for (name, method) in table where name.count == bytes.count && bytes.elementsEqual(name) { return method }
        return nil
    }
}

extension UnsafeRawBufferPointer {
    /// Whether these bytes spell `lowercased` in any ASCII case (non-ASCII bytes never fold).
    func elementsEqualIgnoringASCIICase(_ lowercased: [UInt8]) -> Bool {
        guard count == lowercased.count else { return false }
        for index in 0..<count where ASCIIByte.lowercased(self[index]) != lowercased[index] { return false }
        return true
    }
}
