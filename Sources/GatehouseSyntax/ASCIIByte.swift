/// Byte classes and constants for the hot-path scanners (request targets, header names and values),
/// written as switches so that no table, regex or Foundation call is involved.
public enum ASCIIByte {
    @inlinable public static var slash: UInt8 { UInt8(ascii: "/") }
    @inlinable public static var backslash: UInt8 { UInt8(ascii: "\\") }
    @inlinable public static var question: UInt8 { UInt8(ascii: "?") }
    @inlinable public static var percent: UInt8 { UInt8(ascii: "%") }
    @inlinable public static var dot: UInt8 { UInt8(ascii: ".") }
    @inlinable public static var semicolon: UInt8 { UInt8(ascii: ";") }
    @inlinable public static var comma: UInt8 { UInt8(ascii: ",") }
    @inlinable public static var space: UInt8 { UInt8(ascii: " ") }
    @inlinable public static var hyphen: UInt8 { UInt8(ascii: "-") }
    @inlinable public static var underscore: UInt8 { UInt8(ascii: "_") }
    @inlinable public static var carriageReturn: UInt8 { UInt8(ascii: "\r") }
    @inlinable public static var lineFeed: UInt8 { UInt8(ascii: "\n") }
    @inlinable public static var tab: UInt8 { UInt8(ascii: "\t") }
    @inlinable public static var colon: UInt8 { UInt8(ascii: ":") }
    @inlinable public static var equals: UInt8 { UInt8(ascii: "=") }
    @inlinable public static var quote: UInt8 { UInt8(ascii: "\"") }

    /// OWS (RFC 9110 §5.6.3): space or HTAB.
    @inlinable public static func isOptionalWhitespace(_ byte: UInt8) -> Bool {
        byte == space || byte == tab
    }

    /// A field value byte (RFC 9110 §5.5): HTAB, visible ASCII, space, obs-text. No controls, no DEL.
    @inlinable public static func isFieldValueByte(_ byte: UInt8) -> Bool {
        byte == tab || (byte >= 0x20 && byte != 0x7F)
    }

    /// HTAB, space and visible ASCII: a field value byte that is neither obs-text nor refused.
    @inlinable public static func isVisibleASCIIOrWhitespace(_ byte: UInt8) -> Bool {
        byte == tab || (byte >= 0x20 && byte < 0x7F)
    }

    /// RFC 3986 unreserved: ALPHA / DIGIT / "-" / "." / "_" / "~".
    @inlinable public static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// A byte allowed in the path of an origin-form target: pchar, `/` and `%`, plus `[` `]` as data.
    /// Excludes controls, space, non-ASCII, `"` `#` `<` `>` `?` `\` `^` `` ` `` `{` `|` `}` and DEL.
    @inlinable public static func isPathByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x21, 0x24...0x3B, 0x3D, 0x40...0x5B, 0x5D, 0x5F, 0x61...0x7A, 0x7E:
            return true
        default:
            return false
        }
    }

    /// A byte allowed in the query: a path byte or `?`.
    @inlinable public static func isQueryByte(_ byte: UInt8) -> Bool {
        byte == question || isPathByte(byte)
    }

    /// RFC 9110 tchar: the bytes of header names and authentication scheme names.
    @inlinable public static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
            UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
            UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            true
        default:
            false
        }
    }

    @inlinable public static func decimalValue(_ byte: UInt8) -> UInt8? {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") ? byte - UInt8(ascii: "0") : nil
    }

    @inlinable public static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        default: return nil
        }
    }

    /// The byte a percent-encoding (`%XX`, RFC 3986 §2.1) starting at `index` stands for; nil when two hex digits do
    /// not follow the `%`.
    @inlinable public static func percentDecoded(_ bytes: ArraySlice<UInt8>, at index: Int) -> UInt8? {
        guard index + 2 < bytes.endIndex, let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2]) else { return nil }
        return high << 4 | low
    }

    /// The upper-case hex digit for a value 0...15.
    @inlinable public static func upperHexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "A") + value - 10
    }

    /// ASCII-only lower-casing: non-ASCII bytes stay as they are, so no Unicode case mapping (the Kelvin
    /// sign lower-cases to `k`) can make a foreign string equal to an ASCII one.
    @inlinable public static func lowercased(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
    }

    /// Header-name folding of docs/reference.md §5: ASCII lower case, and `_` read as `-`.
    @inlinable public static func foldedHeaderNameByte(_ byte: UInt8) -> UInt8 {
        byte == underscore ? hyphen : lowercased(byte)
    }

    /// Whether a header name begins with an already folded prefix, compared without allocating: this runs for
    /// every header of every request.
    @inlinable public static func hasFoldedHeaderNamePrefix(_ name: String, _ foldedPrefix: [UInt8]) -> Bool {
        let utf8 = name.utf8
        guard utf8.count >= foldedPrefix.count else { return false }
        return zip(utf8, foldedPrefix).allSatisfy { foldedHeaderNameByte($0) == $1 }
    }
}
