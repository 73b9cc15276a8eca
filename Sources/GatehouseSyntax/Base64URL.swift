/// Canonical, unpadded base64url (RFC 4648 §5) as JWS requires (RFC 7515 §2).
///
/// Decoding accepts exactly one spelling per byte string: no `=`, no whitespace, no `+` or `/`,
/// no length that leaves a lone character, and no set bits in the unused tail of the last
/// character. A lenient decoder makes token strings malleable (the same signed bytes under
/// many spellings), which breaks caching, revocation lists and fingerprints keyed on the token.
public enum Base64URL {
    /// Decodes canonical unpadded base64url, or returns `nil` for anything else.
    @inlinable public static func decode(_ text: some Collection<UInt8>) -> [UInt8]? {
        if let result = text.withContiguousStorageIfAvailable({ decode(buffer: $0) }) {
            return result
        }
        return Array(text).withUnsafeBufferPointer { decode(buffer: $0) }
    }

    /// Encodes bytes as base64url without padding.
    @inlinable public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        if let result = bytes.withContiguousStorageIfAvailable({ encode(buffer: $0) }) {
            return result
        }
        return Array(bytes).withUnsafeBufferPointer { encode(buffer: $0) }
    }

    public static func decode(buffer input: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard let outputCount = decodedCount(of: input.count) else { return nil }
        var valid = true
        let output = [UInt8](unsafeUninitializedCapacity: outputCount) { out, initialized in
            let written = decodeTable.withUnsafeBufferPointer { decode(input, into: out, table: $0) }
            valid = written != nil
            initialized = written ?? 0
        }
        return valid ? output : nil
    }

    /// How many bytes `count` characters decode to; nil for a length no canonical encoding has (a lone last character).
    private static func decodedCount(of count: Int) -> Int? {
        let remainder = count % 4
        if remainder == 1 { return nil }
        return count / 4 * 3 + (remainder == 0 ? 0 : remainder - 1)
    }

    /// Decodes into `out` (sized by the caller) and returns the byte count, or `nil` if `input` is not canonical.
    private static func decode(
        _ input: UnsafeBufferPointer<UInt8>, into out: UnsafeMutableBufferPointer<UInt8>, table: UnsafeBufferPointer<UInt8>
    ) -> Int? {
        let remainder = input.count % 4
        let fullEnd = input.count - remainder
        var index = 0
        var written = 0
        while index < fullEnd {
            let a = table[Int(input[index])], b = table[Int(input[index + 1])]
            let c = table[Int(input[index + 2])], d = table[Int(input[index + 3])]
            // 0xFF marks an invalid character; OR-ing catches any of the four in one test.
            if (a | b | c | d) & 0x80 != 0 { return nil }
            let word = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
            out[written] = UInt8(truncatingIfNeeded: word >> 16)
            out[written + 1] = UInt8(truncatingIfNeeded: word >> 8)
            out[written + 2] = UInt8(truncatingIfNeeded: word)
            written += 3
            index += 4
        }
        if remainder == 2 {
            let a = table[Int(input[index])], b = table[Int(input[index + 1])]
            // The low 4 bits of the last character are padding and must be zero.
            guard (a | b) & 0x80 == 0, b & 0x0F == 0 else { return nil }
            out[written] = a << 2 | b >> 4
            written += 1
        } else if remainder == 3 {
            let a = table[Int(input[index])], b = table[Int(input[index + 1])], c = table[Int(input[index + 2])]
            // The low 2 bits of the last character are padding and must be zero.
            guard (a | b | c) & 0x80 == 0, c & 0x03 == 0 else { return nil }
            out[written] = a << 2 | b >> 4
            out[written + 1] = (b & 0x0F) << 4 | c >> 2
            written += 2
        }
        return written
    }

    public static func encode(buffer input: UnsafeBufferPointer<UInt8>) -> String {
        let count = input.count
        let outputCount = count / 3 * 4 + (count % 3 == 0 ? 0 : count % 3 + 1)
        return String(unsafeUninitializedCapacity: outputCount) { out in
            let alphabet = encodeAlphabet
            var index = 0
            var written = 0
            while index + 3 <= count {
                let word = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
                out[written] = alphabet[Int(word >> 18 & 0x3F)]
                out[written + 1] = alphabet[Int(word >> 12 & 0x3F)]
                out[written + 2] = alphabet[Int(word >> 6 & 0x3F)]
                out[written + 3] = alphabet[Int(word & 0x3F)]
                written += 4
                index += 3
            }
            switch count - index {
            case 1:
                let a = input[index]
                out[written] = alphabet[Int(a >> 2)]
                out[written + 1] = alphabet[Int((a & 0x03) << 4)]
                written += 2
            case 2:
                let a = input[index], b = input[index + 1]
                out[written] = alphabet[Int(a >> 2)]
                out[written + 1] = alphabet[Int((a & 0x03) << 4 | b >> 4)]
                out[written + 2] = alphabet[Int((b & 0x0F) << 2)]
                written += 3
            default:
                break
            }
            return written
        }
    }

    private static let encodeAlphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Maps each byte to its 6-bit value, or 0xFF when the byte is not in the base64url alphabet.
    private static let decodeTable: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (value, character) in encodeAlphabet.enumerated() {
            table[Int(character)] = UInt8(value)
        }
        return table
    }()
}
