/// A `Content-Type` value's essence (RFC 9110 §8.3.1: `type/subtype`, before any `;` parameters), compared without
/// making a string of it: this runs on request paths (every POST to an MCP server).
public enum MediaType {
    /// Whether `value`'s essence, optional whitespace around it trimmed, is `essence` in any ASCII case. `essence` is
    /// given in lower case.
    public static func hasEssence(_ value: String, _ essence: String) -> Bool {
        var value = value
        var essence = essence
        return value.withUTF8 { bytes in
            essence.withUTF8 { expected in
                var start = 0
                var end = bytes.firstIndex(of: ASCIIByte.semicolon) ?? bytes.count
                while start < end, ASCIIByte.isOptionalWhitespace(bytes[start]) { start += 1 }
                while end > start, ASCIIByte.isOptionalWhitespace(bytes[end - 1]) { end -= 1 }
                guard end - start == expected.count else { return false }
                for offset in 0..<expected.count where ASCIIByte.lowercased(bytes[start + offset]) != expected[offset] { return false }
                return true
            }
        }
    }
}
