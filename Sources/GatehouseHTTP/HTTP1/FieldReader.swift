import NIOCore
public import NIOHTTP1
import GatehouseSyntax

/// Reads the field lines of a head or trailer section whose line endings were already checked
/// (every CR is followed by LF): `name ":" OWS value OWS CRLF`, up to the empty line that ends it.
/// Names are tokens, values hold no control bytes and their bytes above 0x7F are UTF-8, obs-fold is
/// refused (RFC 9112 §5.2 allows that).
public struct FieldReader {
    public let bytes: UnsafeRawBufferPointer

    /// The fields in order, and what the framing rules need to know of them.
    public struct Fields {
        public var list: [(String, String)] = []
        public var contentLengthCount = 0
        public var contentLength = 0
        public var transferEncodingCount = 0
        public var transferEncodingIsChunked = false
        public var hasUpgrade = false
        /// `Connection: close` or `Proxy-Connection: close` (which llhttp honoured like `Connection`;
        /// NIO's keep-alive reading of a head looks at `Connection` only).
        public var connectionCloses = false
        /// A connection field ending in a tab, which llhttp does not read as `keep-alive`.
        public var connectionEndsInTab = false

        /// Whether another request may follow: HTTP/1.1 unless told to close, HTTP/1.0 only with a
        /// readable `keep-alive`.
        public func keepsConnection(_ head: HTTPRequestHead) -> Bool {
            head.isKeepAlive && !connectionCloses && !(head.version == .http1_0 && connectionEndsInTab)
        }

        /// RFC 9112 §6: one `Content-Length` of digits, or `Transfer-Encoding: chunked` alone (never
        /// with a length, never twice, never on HTTP/1.0, no other coding: Gatehouse re-frames bodies).
        public func framing(version: HTTPVersion) throws(HTTPParserError) -> RequestBodyFraming {
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
    public func lineEnd(from start: Int) -> Int {
        var index = ByteRuns.firstByte(below: ASCIIByte.carriageReturn + 1, in: bytes, from: start, to: bytes.count)
        while bytes[index] != ASCIIByte.carriageReturn {  // a control byte below CR (refused by the field's reading)
            index = ByteRuns.firstByte(below: ASCIIByte.carriageReturn + 1, in: bytes, from: index + 1, to: bytes.count)
        }
        return index
    }

    /// The field lines from `start` to the section's closing empty line.
    public mutating func readFields(from start: Int) throws(HTTPParserError) -> Fields {
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
        while valueStart < valueEnd, ASCIIByte.isOptionalWhitespace(bytes[valueStart]) { valueStart += 1 }
        while valueEnd > valueStart, ASCIIByte.isOptionalWhitespace(bytes[valueEnd - 1]) { valueEnd -= 1 }
        var nonASCII = false
        var index = ByteRuns.firstNonPrintable(in: bytes, from: valueStart, to: valueEnd)
        while index < valueEnd {
            if !ASCIIByte.isVisibleASCIIOrWhitespace(bytes[index]) {
                guard bytes[index] >= 0x80 else { throw .invalidHeaderToken }  // a control byte or DEL
                nonASCII = true
            }
            index = ByteRuns.firstNonPrintable(in: bytes, from: index + 1, to: valueEnd)
        }
        // obs-text only as UTF-8: the rule both doors share (FieldValueUTF8).
        if nonASCII, !FieldValueUTF8.isAccepted(UnsafeRawBufferPointer(rebasing: bytes[valueStart..<valueEnd])) { throw .invalidHeaderToken }
        // A tab after the value of a framing or connection field is where parsers part ways (llhttp
        // refuses `Content-Length: 5<TAB>` and does not read `chunked<TAB>` or `keep-alive<TAB>`).
        let trailingTab = bytes[valueEnd..<end].contains(ASCIIByte.tab)
        try noteFraming(start..<colon, valueStart..<valueEnd, trailingTab: trailingTab, in: &fields)
        fields.list.append((
            String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<colon]), as: UTF8.self),
            String(decoding: UnsafeRawBufferPointer(rebasing: bytes[valueStart..<valueEnd]), as: UTF8.self)
        ))
    }

    private func noteFraming(_ name: Range<Int>, _ value: Range<Int>, trailingTab: Bool, in fields: inout Fields) throws(HTTPParserError) {
        switch name.count {
        case 14 where FieldBytes.equalsIgnoringCase(bytes, name, "content-length"):
            guard !trailingTab else { throw .invalidContentLength }
            fields.contentLengthCount += 1
            fields.contentLength = try contentLengthValue(value)
        case 17 where FieldBytes.equalsIgnoringCase(bytes, name, "transfer-encoding"):
            guard !trailingTab else { throw .invalidHeaderToken }
            fields.transferEncodingCount += 1
            fields.transferEncodingIsChunked = FieldBytes.equalsIgnoringCase(bytes, value, "chunked")
        case 7 where FieldBytes.equalsIgnoringCase(bytes, name, "upgrade"):
            fields.hasUpgrade = true
        case 10 where FieldBytes.equalsIgnoringCase(bytes, name, "connection"),
            16 where FieldBytes.equalsIgnoringCase(bytes, name, "proxy-connection"):
            FieldBytes.forEachToken(bytes, value) { token in
                if FieldBytes.equalsIgnoringCase(bytes, token, "close") { fields.connectionCloses = true }
            }
            fields.connectionEndsInTab = fields.connectionEndsInTab || trailingTab
        default:
            break
        }
    }

    /// 1*DIGIT, at most 18 of them (no sign, no list, no overflow).
    private func contentLengthValue(_ value: Range<Int>) throws(HTTPParserError) -> Int {
        guard !value.isEmpty, value.count <= 18 else { throw .invalidContentLength }
        var length = 0
        for index in value {
            guard let digit = ASCIIByte.decimalValue(bytes[index]) else { throw .invalidContentLength }
            length = length * 10 + Int(digit)
        }
        return length
    }
}
