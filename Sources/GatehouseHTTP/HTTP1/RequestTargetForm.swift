import GatehouseSyntax

/// The shapes of request target the parser lets through (RFC 9112 §3.2), as llhttp did: origin-form
/// (`/…`), `*`, absolute-form (`scheme://authority[/…|?…]`, the scheme letters only), and for
/// CONNECT authority-form. The handler then takes origin-form only (PathNormalizer); this check
/// keeps the parser from accepting bytes the previous parser refused.
public enum RequestTargetForm {
    public static func isAcceptable(_ target: UnsafeRawBufferPointer, connect: Bool) -> Bool {
        if connect { return isAuthority(target) }
        if target[0] == ASCIIByte.slash { return true }
        if target.count == 1, target[0] == UInt8(ascii: "*") { return true }
        var index = 0
        while index < target.count, isLetter(target[index]) { index += 1 }
        guard index > 0, target.count >= index + 3, target[index] == ASCIIByte.colon, target[index + 1] == ASCIIByte.slash,
            target[index + 2] == ASCIIByte.slash
        else { return false }
        index += 3
        let authorityStart = index
        while index < target.count, isAuthorityByte(target[index]) { index += 1 }
        guard isAuthority(UnsafeRawBufferPointer(rebasing: target[authorityStart..<index])) else { return false }
        return index == target.count || target[index] == ASCIIByte.slash || target[index] == ASCIIByte.question
    }

    /// Authority bytes only, and never `@@` (llhttp refuses a doubled `@`).
    private static func isAuthority(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var previous: UInt8 = 0
        for byte in bytes {
            guard isAuthorityByte(byte), !(byte == UInt8(ascii: "@") && previous == byte) else { return false }
            previous = byte
        }
        return true
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z")
    }

    /// RFC 3986 authority: unreserved, sub-delims, `:`, `@`, `[`, `]`, `%`.
    private static func isAuthorityByte(_ byte: UInt8) -> Bool {
        if ASCIIByte.isUnreserved(byte) { return true }
        switch byte {
        case UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("), UInt8(ascii: ")"),
            UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"), UInt8(ascii: "="), UInt8(ascii: ":"),
            UInt8(ascii: "@"), UInt8(ascii: "["), UInt8(ascii: "]"), UInt8(ascii: "%"):
            return true
        default:
            return false
        }
    }
}
