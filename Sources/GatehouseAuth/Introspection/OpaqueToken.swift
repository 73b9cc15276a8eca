import GatehouseSyntax

/// Which tokens go to an introspection provider: those that are not a compact JWS (RFC 7515 §7.1).
enum OpaqueToken {
    /// Three segments, the first a base64url JSON object (its first byte `{`, possibly after spaces):
    /// what `CompactJWS` would judge. Anything else (`ya29.…`, a random reference token) is opaque.
    static func looksLikeCompactJWS(_ token: Substring) -> Bool {
        let utf8 = token.utf8
        var dots = 0
        var firstDot: String.UTF8View.Index?
        for index in utf8.indices where utf8[index] == ASCIIByte.dot {
            dots += 1
            if firstDot == nil { firstDot = index }
            if dots > 2 { return false }
        }
        guard dots == 2, let firstDot, let header = Base64URL.decode(utf8[utf8.startIndex..<firstDot]) else { return false }
        return header.first(where: { $0 != ASCIIByte.space && $0 != ASCIIByte.tab && $0 != ASCIIByte.lineFeed && $0 != ASCIIByte.carriageReturn })
            == UInt8(ascii: "{")
    }
}
