public import NIOCore
import GatehouseSyntax

/// An upstream response head as it arrived: the received bytes, and where each header field lies
/// in them, so that relaying it copies byte ranges instead of building strings.
public struct UpstreamResponseHead {
    /// How the body that follows the head is delimited (RFC 9112 §6.3).
    public enum Framing: Equatable {
        /// No body: 1xx, 204, 304, or the answer to a HEAD request.
        case none
        case contentLength(Int)
        case chunked
        /// The body ends when the upstream closes the connection.
        case untilClose
    }

    /// What relaying a field needs to know about its name.
    public enum FieldKind: Equatable {
        case other
        case contentLength
        case transferEncoding
        case connection
        /// `Keep-Alive`, `TE`, `Trailer`, `Upgrade`, `Proxy-*`, `Proxy`: never relayed.
        case hopByHop
        /// Replaced by Gatehouse's own.
        case requestID
    }

    public struct Field {
        public var kind: FieldKind
        public var name: Range<Int>
        public var value: Range<Int>
        /// The whole line without its CRLF.
        public var line: Range<Int>
    }

    /// Status line through the blank line; offsets below are from its reader index.
    public var bytes: ByteBuffer
    public var status: Int
    public var reason: Range<Int>
    public var fields: [Field]
    public var framing: Framing
    /// Whether the upstream lets the connection be reused after this response.
    public var keepAlive: Bool
    /// The `Content-Length` value(s), once: relayed as one field whatever form it came in (`5, 5`).
    public var contentLength: Int?
    /// Names the upstream's `Connection` header lists (hop-by-hop too), as value ranges.
    public var nominated: [Range<Int>]

    public var isInformational: Bool { (100..<200).contains(status) }

    /// The `Content-Length` the client gets: none when the body is chunked (the length does not
    /// frame it then) or on a 1xx or 204 (which may not carry one), else the upstream's.
    public var relayedContentLength: Int? { framing == .chunked || isInformational || status == 204 ? nil : contentLength }

    /// Whether the field is copied to the client as received: hop-by-hop fields, the ones the
    /// `Connection` header lists, the upstream's `X-Request-Id` are not, nor `Content-Length`
    /// (written once from `relayedContentLength`).
    public func isRelayed(_ field: Field) -> Bool {
        switch field.kind {
        case .hopByHop, .transferEncoding, .connection, .requestID, .contentLength:
            return false
        case .other:
            return nominated.isEmpty || !nominated.contains { bytesEqualIgnoringCase(field.name, $0) }
        }
    }

    /// The value of the first field named `lowercasedName` (ASCII case-insensitively).
    public func firstValue(of lowercasedName: String) -> String? {
        var lowercasedName = lowercasedName
        return lowercasedName.withUTF8 { name in
            let base = bytes.readerIndex
            for field in fields where field.name.count == name.count {
                let matches = (0..<name.count).allSatisfy { offset in
                    bytes.getInteger(at: base + field.name.lowerBound + offset, as: UInt8.self).map(ASCIIByte.lowercased) == name[offset]
                }
                if matches { return bytes.getString(at: base + field.value.lowerBound, length: field.value.count) }
            }
            return nil
        }
    }

    private func bytesEqualIgnoringCase(_ first: Range<Int>, _ second: Range<Int>) -> Bool {
        guard first.count == second.count else { return false }
        let base = bytes.readerIndex
        for offset in 0..<first.count {
            guard let a = bytes.getInteger(at: base + first.lowerBound + offset, as: UInt8.self),
                let b = bytes.getInteger(at: base + second.lowerBound + offset, as: UInt8.self),
                ASCIIByte.lowercased(a) == ASCIIByte.lowercased(b)
            else { return false }
        }
        return true
    }
}
