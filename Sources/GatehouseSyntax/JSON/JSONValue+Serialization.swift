extension JSONValue {
    /// Deterministic compact JSON: no whitespace, object members sorted by the UTF-8 bytes of their
    /// names, numbers exactly as their literal text.
    ///
    /// Strings are escaped as RFC 8785 (JCS) does: `"` and `\` escaped, `\b \f \n \r \t` in their short
    /// forms, every other control character as `\u00xx` (lowercase hex), everything else, non-ASCII
    /// included, as UTF-8. The same value always gives the same text, so it can be hashed or compared.
    public var compactJSON: String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(128)
        appendCompactJSON(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    public func appendCompactJSON(to bytes: inout [UInt8]) {
        switch self {
        case .null:
            bytes.append(contentsOf: "null".utf8)
        case .bool(let value):
            bytes.append(contentsOf: (value ? "true" : "false").utf8)
        case .number(let literal):
            bytes.append(contentsOf: literal.utf8)
        case .string(let text):
            Self.appendQuoted(text, to: &bytes)
        case .array(let elements):
            bytes.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                element.appendCompactJSON(to: &bytes)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            bytes.append(UInt8(ascii: "{"))
            let names = members.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            for (index, name) in names.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                Self.appendQuoted(name, to: &bytes)
                bytes.append(UInt8(ascii: ":"))
                members[name]?.appendCompactJSON(to: &bytes)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    private static func appendQuoted(_ text: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x08: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
            case 0x0C: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
            case 0x0A: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0x00..<0x20:
                let hex: [UInt8] = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                bytes.append(hex[Int(byte >> 4)])
                bytes.append(hex[Int(byte & 0x0F)])
            default:
                bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
