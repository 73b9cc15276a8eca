public import NIOCore
import GatehouseSyntax

/// Strict parsing of one upstream response head (RFC 9112 §4-6). The upstream is trusted to
/// answer, not to frame: anything ambiguous (two lengths, an unknown transfer coding, folded or
/// bare-LF lines, control bytes) is refused, because a mis-framed response on a pooled connection
/// would be served to the next client.
public enum UpstreamResponseHeadParser {
    public struct Malformed: Error, CustomStringConvertible, Equatable {
        public var description: String
        public init(_ description: String) { self.description = description }

        /// An HTTP/2-only (or gRPC) upstream behind `protocol = "http1"`: said in the operational log.
        public static let speaksHTTP2 = Malformed(
            "the upstream speaks HTTP/2 (its first bytes are a SETTINGS frame); set [upstream] protocol = \"http2\"")
    }

    /// - Parameters:
    ///   - head: exactly the head, from the status line through the empty line's CRLF.
    ///   - requestWasHEAD: the answer to a HEAD request has no body whatever its headers say.
    ///   - fieldStorage: an array used again for each head of a connection: its storage is taken when the last head
    ///     that used it is gone (no allocation per response once warm), and it keeps this head's fields after.
    public static func parse(
        _ head: ByteBuffer, requestWasHEAD: Bool, fieldStorage: inout [UpstreamResponseHead.Field]
    ) throws -> UpstreamResponseHead {
        var fields = fieldStorage
        fieldStorage = []
        fields.removeAll(keepingCapacity: true)
        fields.reserveCapacity(16)  // one allocation for a usual head, not one per doubling
        let parsed = try parse(head, requestWasHEAD: requestWasHEAD, into: &fields)
        fieldStorage = fields
        return parsed
    }

    public static func parse(_ head: ByteBuffer, requestWasHEAD: Bool) throws -> UpstreamResponseHead {
        var fields: [UpstreamResponseHead.Field] = []
        fields.reserveCapacity(16)
        return try parse(head, requestWasHEAD: requestWasHEAD, into: &fields)
    }

    private static func parse(
        _ head: ByteBuffer, requestWasHEAD: Bool, into fields: inout [UpstreamResponseHead.Field]
    ) throws -> UpstreamResponseHead {
        try head.withUnsafeReadableBytes { bytes in
            var cursor = 0
            let (minor, status, reason) = try statusLine(bytes, &cursor)
            var nominated: [Range<Int>] = []
            var contentLength: Int?
            var transferEncodingCount = 0
            var hasChunkedCoding = false
            var connectionClose = false
            var connectionKeepAlive = false
            while true {
                let lineEnd = try endOfLine(bytes, from: cursor)
                if lineEnd == cursor { break }
                let field = try headerField(bytes, cursor..<lineEnd)
                fields.append(field)
                switch field.kind {
                case .contentLength:
                    let length = try contentLengthValue(bytes, field.value)
                    if let contentLength, contentLength != length { throw Malformed("conflicting Content-Length") }
                    contentLength = length
                case .transferEncoding:
                    transferEncodingCount += 1
                    guard transferEncodingCount == 1, FieldBytes.equalsIgnoringCase(bytes, field.value, "chunked") else {
                        throw Malformed("unsupported Transfer-Encoding")
                    }
                    hasChunkedCoding = true
                case .connection:
                    FieldBytes.forEachToken(bytes, field.value) { token in
                        if FieldBytes.equalsIgnoringCase(bytes, token, "close") {
                            connectionClose = true
                        } else if FieldBytes.equalsIgnoringCase(bytes, token, "keep-alive") {
                            connectionKeepAlive = true
                        } else if !FieldBytes.equalsIgnoringCase(bytes, token, "content-length") {
                            nominated.append(token)
                        }
                    }
                    // Each relayed field is compared with each listed name: keep that bounded.
                    guard nominated.count <= 32 else { throw Malformed("Connection lists too many names") }
                case .other, .hopByHop, .requestID:
                    break
                }
                cursor = lineEnd + 2
            }
            guard cursor + 2 == bytes.count else { throw Malformed("bytes after the head") }

            var keepAlive = minor == 1 ? !connectionClose : connectionKeepAlive && !connectionClose
            let framing: UpstreamResponseHead.Framing
            if (100..<200).contains(status) || status == 204 || status == 304 || requestWasHEAD {
                framing = .none
            } else if hasChunkedCoding {
                framing = .chunked
                // RFC 9112 §6.3 item 3 (with a length too) and §6.1 (chunked from HTTP/1.0): framing
                // that intermediaries read differently; the body is taken as chunked, never reused.
                if contentLength != nil || minor == 0 { keepAlive = false }
            } else if let contentLength {
                framing = .contentLength(contentLength)
            } else {
                framing = .untilClose
                keepAlive = false
            }
            return UpstreamResponseHead(
                bytes: head, status: status, reason: reason, fields: fields, framing: framing,
                keepAlive: keepAlive, contentLength: contentLength, nominated: nominated)
        }
    }

    // MARK: - Lines

    /// `HTTP/1.x SP 3DIGIT [SP reason] CRLF`
    private static func statusLine(_ bytes: UnsafeRawBufferPointer, _ cursor: inout Int) throws -> (Int, Int, Range<Int>) {
        let end = try endOfLine(bytes, from: 0)
        guard end >= 12, bytes[0..<7].elementsEqual("HTTP/1.".utf8),
            bytes[7] == UInt8(ascii: "0") || bytes[7] == UInt8(ascii: "1"), bytes[8] == ASCIIByte.space
        else { throw Malformed("bad status line") }
        var status = 0
        for index in 9..<12 {
            guard let digit = ASCIIByte.decimalValue(bytes[index]) else { throw Malformed("bad status code") }
            status = status * 10 + Int(digit)
        }
        guard status >= 100 else { throw Malformed("bad status code") }
        var reason = end..<end
        if end > 12 {
            guard bytes[12] == ASCIIByte.space else { throw Malformed("bad status line") }
            reason = 13..<end
            guard bytes[reason].allSatisfy(ASCIIByte.isFieldValueByte) else { throw Malformed("control byte in reason phrase") }
        }
        cursor = end + 2
        return (Int(bytes[7] - UInt8(ascii: "0")), status, reason)
    }

    /// `name ":" OWS value OWS`; no folding, no space before the colon.
    private static func headerField(_ bytes: UnsafeRawBufferPointer, _ line: Range<Int>) throws -> UpstreamResponseHead.Field {
        guard let colon = bytes[line].firstIndex(of: UInt8(ascii: ":")), colon > line.lowerBound else {
            throw Malformed("bad header line")
        }
        let name = line.lowerBound..<colon
        guard bytes[name].allSatisfy(ASCIIByte.isTokenByte) else { throw Malformed("bad header name") }
        var valueStart = colon + 1
        var valueEnd = line.upperBound
        while valueStart < valueEnd, ASCIIByte.isOptionalWhitespace(bytes[valueStart]) { valueStart += 1 }
        while valueEnd > valueStart, ASCIIByte.isOptionalWhitespace(bytes[valueEnd - 1]) { valueEnd -= 1 }
        let value = valueStart..<valueEnd
        // Printable ASCII skipped eight bytes at a time; what is not (HTAB, obs-text, a control byte, DEL) looked at.
        var index = ByteRuns.firstNonPrintable(in: bytes, from: valueStart, to: valueEnd)
        while index < valueEnd {
            guard ASCIIByte.isFieldValueByte(bytes[index]) else { throw Malformed("control byte in header value") }
            index = ByteRuns.firstNonPrintable(in: bytes, from: index + 1, to: valueEnd)
        }
        return UpstreamResponseHead.Field(kind: kind(bytes, name), name: name, value: value, line: line)
    }

    /// The index of the CR of the next CRLF; a bare CR or LF is refused (response splitting).
    /// Bytes above CR are skipped eight at a time (`ByteRuns`); a control byte below CR is left to the field's check.
    private static func endOfLine(_ bytes: UnsafeRawBufferPointer, from start: Int) throws -> Int {
        var index = ByteRuns.firstByte(below: ASCIIByte.carriageReturn + 1, in: bytes, from: start, to: bytes.count)
        while index < bytes.count {
            switch bytes[index] {
            case ASCIIByte.carriageReturn:
                guard index + 1 < bytes.count, bytes[index + 1] == ASCIIByte.lineFeed else { throw Malformed("bare CR") }
                return index
            case ASCIIByte.lineFeed:
                throw Malformed("bare LF")
            default:
                index = ByteRuns.firstByte(below: ASCIIByte.carriageReturn + 1, in: bytes, from: index + 1, to: bytes.count)
            }
        }
        throw Malformed("unterminated line")
    }

    // MARK: - Fields

    /// Framing fields by their exact names; hop-by-hop ones (`HopByHopFields`, also with `_` for `-`:
    /// `Transfer_Encoding`, `Keep_Alive`), as request hygiene reads them: never relayed, never framing.
    private static func kind(_ bytes: UnsafeRawBufferPointer, _ name: Range<Int>) -> UpstreamResponseHead.FieldKind {
        switch name.count {
        case 14 where FieldBytes.equalsIgnoringCase(bytes, name, "content-length"): .contentLength
        case 17 where FieldBytes.equalsIgnoringCase(bytes, name, "transfer-encoding"): .transferEncoding
        case 10 where FieldBytes.equalsIgnoringCase(bytes, name, "connection"): .connection
        case 12 where FieldBytes.equalsIgnoringCase(bytes, name, "x-request-id"): .requestID
        default:
            HopByHopFields.contains(UnsafeRawBufferPointer(rebasing: bytes[name])) ? .hopByHop : .other
        }
    }

    /// `1*DIGIT`, or a list of equal ones (`5, 5`), which RFC 9110 §8.6 lets a recipient accept.
    private static func contentLengthValue(_ bytes: UnsafeRawBufferPointer, _ value: Range<Int>) throws -> Int {
        var result: Int?
        try FieldBytes.forEachToken(bytes, value) { token in
            guard token.count <= 18 else { throw Malformed("bad Content-Length") }
            var length = 0
            for index in token {
                guard let digit = ASCIIByte.decimalValue(bytes[index]) else { throw Malformed("bad Content-Length") }
                length = length * 10 + Int(digit)
            }
            if let result, result != length { throw Malformed("conflicting Content-Length") }
            result = length
        }
        guard let result else { throw Malformed("empty Content-Length") }
        return result
    }
}
