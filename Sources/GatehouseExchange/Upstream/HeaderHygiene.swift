public import NIOHTTP1
import GatehouseSyntax

/// Removal of request headers the upstream must not receive from the client (docs/reference.md §5,
/// docs/security.md P01-P05, P26). Both functions act on the headers they are given only, so the caller adds its
/// own headers (identity, `X-Forwarded-*`) afterwards and nothing the client sent can remove them.
public enum HeaderHygiene {
    /// Removes hop-by-hop headers (`HopByHopFields`) and every name a `Connection` header lists.
    ///
    /// `Content-Length` and `Host` are kept even when `Connection` lists them: they frame and address the
    /// request, and the forwarder needs them intact. Framing of a chunked body (its `Transfer-Encoding` is
    /// removed here) is the forwarder's to re-establish.
    ///
    /// - Parameter keepWebSocketUpgrade: the caller has decided this is a WebSocket upgrade to proxy; then
    ///   exactly `Upgrade: websocket` and `Connection: upgrade` are sent (never `h2c` or other protocols).
    public static func removeHopByHop(_ headers: inout HTTPHeaders, keepWebSocketUpgrade: Bool) {
        let nominated = connectionNominations(headers)
        var doomed: [String] = []
        for (name, _) in headers where isHopByHop(name, nominated: nominated) && !doomed.contains(name) {
            doomed.append(name)
        }
        for name in doomed {
            headers.remove(name: name)
        }
        if keepWebSocketUpgrade {
            headers.add(name: "Upgrade", value: "websocket")
            headers.add(name: "Connection", value: "upgrade")
        }
    }

    /// Removes every header whose name `names` says is an identity header, on every route (public ones too).
    public static func removeIdentityHeaders(_ headers: inout HTTPHeaders, names: IdentityHeaderNames) {
        var doomed: [String] = []
        for (name, _) in headers where names.isIdentityHeader(name) && !doomed.contains(name) {
            doomed.append(name)
        }
        for name in doomed {
            headers.remove(name: name)
        }
    }

    /// Fields a request trailer section may not carry (RFC 9110 §6.5.1), beside the hop-by-hop and
    /// identity ones: framing, routing, request modifiers, authentication, content processing, and the
    /// fields Gatehouse itself vouches for in the head. An upstream that merges trailers into the head
    /// (Tomcat's `allowedTrailerHeaders`, Go's `Request.Trailer`, gRPC metadata) must not find there
    /// what the head was judged and forwarded without.
    static func isForbiddenInTrailers(_ name: String) -> Bool {
        let count = name.utf8.count
        return forbiddenInTrailers.contains { $0.count == count && ASCIIByte.hasFoldedHeaderNamePrefix(name, $0) }
    }

    private static let forbiddenInTrailers: [[UInt8]] = [
        "content-length", "host", "authorization", "dpop", "cookie", "cache-control", "expect", "max-forwards", "pragma", "range",
        "if-match", "if-none-match", "if-modified-since", "if-unmodified-since", "if-range", "content-encoding", "content-type",
        "content-range", "x-request-id", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto", "forwarded", "x-real-ip",
    ].map { Array($0.utf8) }

    private static let connection: [UInt8] = Array("connection".utf8)
    private static let protectedNames: [[UInt8]] = ["content-length", "host"].map { Array($0.utf8) }

    /// The names the `Connection` headers list (folded), except the protected `Content-Length` and `Host`.
    package static func connectionNominations(_ headers: HTTPHeaders) -> [[UInt8]] {
        var nominated: [[UInt8]] = []
        for (name, value) in headers where ASCIIByte.hasFoldedHeaderNamePrefix(name, connection) && name.utf8.count == connection.count {
            for token in value.utf8.split(separator: ASCIIByte.comma) {
                let folded = trimmed(token).map(ASCIIByte.foldedHeaderNameByte)
                if !folded.isEmpty, !protectedNames.contains(folded) { nominated.append(folded) }
            }
        }
        return nominated
    }

    /// Whether `removeHopByHop` removes a header of this name, given `connectionNominations`.
    static func isHopByHop(_ name: String, nominated: [[UInt8]]) -> Bool {
        let count = name.utf8.count
        func equals(_ folded: [UInt8]) -> Bool {
            folded.count == count && ASCIIByte.hasFoldedHeaderNamePrefix(name, folded)
        }
        return HopByHopFields.contains(name.utf8) || nominated.contains(where: equals)
    }

    private static let trailers: [UInt8] = Array("trailers".utf8)

    /// Whether a `TE` value lists `trailers` (RFC 9110 §10.1.4: comma-separated, optional whitespace, any case): read
    /// in place, as it is on every gRPC call (a string search here built a table per call, which showed in profiles).
    static func listsTrailers(_ value: String) -> Bool {
        var value = value
        return value.withUTF8 { bytes in
            var start = 0
            while start <= bytes.count {
                var end = start
                while end < bytes.count, bytes[end] != ASCIIByte.comma { end += 1 }
                var first = start
                var last = end
                while first < last, isOptionalWhitespace(bytes[first]) { first += 1 }
                while last > first, isOptionalWhitespace(bytes[last - 1]) { last -= 1 }
                if last - first == trailers.count,
                   zip(bytes[first..<last], trailers).allSatisfy({ ASCIIByte.lowercased($0) == $1 }) {
                    return true
                }
                start = end + 1
            }
            return false
        }
    }

    /// OWS (RFC 9110 §5.6.3): a space or a tab.
    private static func isOptionalWhitespace(_ byte: UInt8) -> Bool {
        byte == ASCIIByte.space || byte == UInt8(ascii: "\t")
    }

    /// The token without the optional whitespace (spaces, tabs) around it.
    private static func trimmed(_ token: Substring.UTF8View.SubSequence) -> Substring.UTF8View.SubSequence {
        guard let first = token.firstIndex(where: { !isOptionalWhitespace($0) }),
            let last = token.lastIndex(where: { !isOptionalWhitespace($0) })
        else { return token[token.endIndex...] }
        return token[first...last]
    }
}
