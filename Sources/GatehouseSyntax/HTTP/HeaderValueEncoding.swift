/// Claim values as identity-header values (docs/reference.md §5 "Header values", docs/security.md P13).
///
/// The output only ever holds visible ASCII and inner spaces, so no claim can carry CR, LF, NUL, controls,
/// bidi overrides or other non-ASCII into a header, and the encoding is deterministic and reversible:
/// an upstream may always percent-decode a value (every `%` in the output starts an escape).
public enum HeaderValueEncoding {
    /// The header value for a claim; nil for `null` (no header is sent).
    ///
    /// - strings: see `encode(string:)`;
    /// - numbers: their JSON literal as the issuer wrote it; booleans: `true` / `false`;
    /// - arrays of strings, numbers and booleans: the elements comma-joined, a `,` inside an element encoded
    ///   as `%2C`; an empty array is the empty value;
    /// - other arrays (holding `null`, arrays or objects) and objects: their compact JSON, encoded as a string.
    public static func encode(_ value: JSONValue) -> String? {
        switch value {
        case .null:
            return nil
        case .bool(let flag):
            return flag ? "true" : "false"
        case .number(let literal):
            return encode(string: literal)
        case .string(let string):
            return encode(string: string)
        case .array(let elements):
            guard elements.allSatisfy(\.isHeaderListScalar) else { return encode(string: value.compactJSON) }
            return elements.map(encodeListElement).joined(separator: ",")
        case .object:
            return encode(string: value.compactJSON)
        }
    }

    /// A string as a header value: unchanged when every byte is visible ASCII (0x21-0x7E) or an inner space
    /// and none is `%`; otherwise each other UTF-8 byte, each `%`, and each space at the start or end is
    /// written `%XX` (upper-case hex).
    ///
    /// Leading and trailing spaces are encoded although docs/reference.md §5 lets spaces through: HTTP parsers
    /// trim them from field values, which would make `" alice"` arrive as `alice`.
    public static func encode(string: String) -> String {
        percentEncoded(string, encodingComma: false)
    }

    /// Whether `bytes` (a string's UTF-8, or a number's literal) are their own header value: what `encode(string:)`
    /// returns unchanged. A claim's value read from the signed bytes is then written as it is, with no `String` made.
    public static func isVerbatim(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let first = bytes.first, let last = bytes.last else { return true }
        return first != ASCIIByte.space && last != ASCIIByte.space && !bytes.contains { needsEncoding($0, encodingComma: false) }
    }

    private static func encodeListElement(_ element: JSONValue) -> String {
        switch element {
        case .string(let string): return percentEncoded(string, encodingComma: true)
        case .number(let literal): return percentEncoded(literal, encodingComma: true)
        case .bool(let flag): return flag ? "true" : "false"
        case .null, .array, .object: return ""  // unreachable: filtered by isHeaderListScalar
        }
    }

    private static func percentEncoded(_ string: String, encodingComma: Bool) -> String {
        let utf8 = string.utf8
        // Spaces before `start` or from `end` on are at the edges.
        let start = utf8.firstIndex { $0 != ASCIIByte.space } ?? utf8.endIndex
        let end = utf8.lastIndex { $0 != ASCIIByte.space }.map(utf8.index(after:)) ?? utf8.endIndex
        let edgesAreClean = start == utf8.startIndex && end == utf8.endIndex
        if edgesAreClean, !utf8.contains(where: { needsEncoding($0, encodingComma: encodingComma) }) {
            return string
        }
        var output: [UInt8] = []
        output.reserveCapacity(utf8.count * 3)
        var index = utf8.startIndex
        while index != utf8.endIndex {
            let byte = utf8[index]
            let atEdge = index < start || index >= end
            if needsEncoding(byte, encodingComma: encodingComma) || (atEdge && byte == ASCIIByte.space) {
                output.append(ASCIIByte.percent)
                output.append(ASCIIByte.upperHexDigit(byte >> 4))
                output.append(ASCIIByte.upperHexDigit(byte & 0x0F))
            } else {
                output.append(byte)
            }
            index = utf8.index(after: index)
        }
        return String(decoding: output, as: UTF8.self)
    }

    private static func needsEncoding(_ byte: UInt8, encodingComma: Bool) -> Bool {
        guard byte >= ASCIIByte.space, byte <= 0x7E else { return true }
        return byte == ASCIIByte.percent || (encodingComma && byte == ASCIIByte.comma)
    }
}

extension JSONValue {
    /// Strings, numbers and booleans: what an array may hold to be sent as a comma-joined list.
    fileprivate var isHeaderListScalar: Bool {
        switch self {
        case .string, .number, .bool: return true
        case .null, .array, .object: return false
        }
    }
}
