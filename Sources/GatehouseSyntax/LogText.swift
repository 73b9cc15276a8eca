/// Text that came from a client, made safe to put in a log line.
public enum LogText {
    /// Cuts to at most `maxBytes` UTF-8 bytes on a character boundary (docs/reference.md §8: 256).
    public static func truncated(_ text: String, maxBytes: Int = 256) -> String {
        guard text.utf8.count > maxBytes else { return text }
        var result = ""
        var used = 0
        for character in text {
            let size = character.utf8.count
            if used + size > maxBytes { break }
            result.append(character)
            used += size
        }
        return result
    }

    /// Bytes a peer sent, for an operational log line: visible ASCII and spaces as they are, anything
    /// else as `\xNN`, so a binary protocol's greeting is readable and cannot break the line.
    public static func printable(_ bytes: some Collection<UInt8>) -> String {
        var text = ""
        for byte in bytes {
            if byte >= 0x20 && byte < 0x7F && byte != UInt8(ascii: "\\") {
                text.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                text += "\\x"
                text.unicodeScalars.append(Unicode.Scalar(ASCIIByte.upperHexDigit(byte >> 4)))
                text.unicodeScalars.append(Unicode.Scalar(ASCIIByte.upperHexDigit(byte & 0x0F)))
            }
        }
        return text
    }
}

extension String {
    /// This string as a JSON string literal (quotes included). Every C0 and C1 control character
    /// (U+0085 ends a line for some readers, U+009B starts a terminal escape), DEL and the
    /// Unicode line separators are escaped, so a value can never break a log line (docs/security.md J45).
    public var jsonQuoted: String {
        var out = ""
        out.reserveCapacity(utf8.count + 2)
        out.appendJSONQuoted(self)
        return out
    }

    /// Appends `value` as a JSON string literal (see `jsonQuoted`), with no string in between.
    public mutating func appendJSONQuoted(_ value: String) {
        append("\"")
        // Most values are plain printable ASCII: appended as they are, not scalar by scalar.
        if value.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }) {
            append(value)
            append("\"")
            return
        }
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": append("\\\"")
            case "\\": append("\\\\")
            case "\n": append("\\n")
            case "\r": append("\\r")
            case "\t": append("\\t")
            case _ where scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar.value == 0x2028 || scalar.value == 0x2029:
                let hex = String(scalar.value, radix: 16)
                append("\\u" + String(repeating: "0", count: 4 - hex.count) + hex)
            default:
                unicodeScalars.append(scalar)
            }
        }
        append("\"")
    }
}
