/// Byte classes and constants for the hot-path scanners (request targets, header names and values),
/// written as switches so that no table, regex or Foundation call is involved.
package enum ASCIIByte {
    package static let slash = UInt8(ascii: "/")
    package static let backslash = UInt8(ascii: "\\")
    package static let question = UInt8(ascii: "?")
    package static let percent = UInt8(ascii: "%")
    package static let dot = UInt8(ascii: ".")
    package static let semicolon = UInt8(ascii: ";")
    package static let comma = UInt8(ascii: ",")
    package static let space = UInt8(ascii: " ")
    package static let hyphen = UInt8(ascii: "-")
    package static let underscore = UInt8(ascii: "_")
    package static let carriageReturn = UInt8(ascii: "\r")
    package static let lineFeed = UInt8(ascii: "\n")
    package static let tab = UInt8(ascii: "\t")
    package static let colon = UInt8(ascii: ":")
    package static let equals = UInt8(ascii: "=")
    package static let quote = UInt8(ascii: "\"")

    /// OWS (RFC 9110 §5.6.3): space or HTAB.
    package static func isOptionalWhitespace(_ byte: UInt8) -> Bool {
        byte == space || byte == tab
    }

    /// A field value byte (RFC 9110 §5.5): HTAB, visible ASCII, space, obs-text. No controls, no DEL.
    package static func isFieldValueByte(_ byte: UInt8) -> Bool {
        byte == tab || (byte >= 0x20 && byte != 0x7F)
    }

    /// HTAB, space and visible ASCII: a field value byte that is neither obs-text nor refused.
    package static func isVisibleASCIIOrWhitespace(_ byte: UInt8) -> Bool {
        byte == tab || (byte >= 0x20 && byte < 0x7F)
    }

    /// RFC 3986 unreserved: ALPHA / DIGIT / "-" / "." / "_" / "~".
    package static func isUnreserved(_ byte: UInt8) -> Bool {
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
    package static func isPathByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x21, 0x24...0x3B, 0x3D, 0x40...0x5B, 0x5D, 0x5F, 0x61...0x7A, 0x7E:
            return true
        default:
            return false
        }
    }

    /// A byte allowed in the query: a path byte or `?`.
    package static func isQueryByte(_ byte: UInt8) -> Bool {
        byte == question || isPathByte(byte)
    }

    /// RFC 9110 tchar: the bytes of header names and authentication scheme names.
    package static func isTokenByte(_ byte: UInt8) -> Bool {
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

    package static func decimalValue(_ byte: UInt8) -> UInt8? {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") ? byte - UInt8(ascii: "0") : nil
    }

    package static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        default: return nil
        }
    }

    /// The upper-case hex digit for a value 0...15.
    package static func upperHexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "A") + value - 10
    }

    /// ASCII-only lower-casing: non-ASCII bytes stay as they are, so no Unicode case mapping (the Kelvin
    /// sign lower-cases to `k`) can make a foreign string equal to an ASCII one.
    package static func lowercased(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
    }

    /// Header-name folding of docs/reference.md §5: ASCII lower case, and `_` read as `-`.
    package static func foldedHeaderNameByte(_ byte: UInt8) -> UInt8 {
        byte == underscore ? hyphen : lowercased(byte)
    }
}
