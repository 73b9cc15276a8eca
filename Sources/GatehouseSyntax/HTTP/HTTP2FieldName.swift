/// HTTP/2 field names are lower case (RFC 9113 §8.2.1). Most arrive so and are taken as they are;
/// only a name with an upper-case letter is copied.
public enum HTTP2FieldName {
    @inlinable public static func lowercased(_ name: String) -> String {
        StringBytes.withBytes(of: name) { bytes in
            guard bytes.contains(where: { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }) else { return name }
            guard StringBytes.isASCII(bytes) else { return name.lowercased() }
            return String(unsafeUninitializedCapacity: bytes.count) { lowered in
                for (index, byte) in bytes.enumerated() { lowered[index] = ASCIIByte.lowercased(byte) }
                return bytes.count
            }
        }
    }

    /// Fields HTTP/2 forbids (RFC 9113 §8.2.2), by their lower-case name; `te` is judged by its value.
    @inlinable public static func isConnectionSpecific(_ lowercasedName: String) -> Bool {
        switch lowercasedName {
        case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade": true
        default: false
        }
    }

    /// RFC 9110 token, lower case (RFC 9113 §8.2.1), not empty.
    @inlinable public static func isLowerCaseToken(_ name: String) -> Bool {
        StringBytes.withBytes(of: name) { bytes in
            !bytes.isEmpty && bytes.allSatisfy { ASCIIByte.isTokenByte($0) && !($0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z")) }
        }
    }

    /// A value that may be relayed as it came (an HTTP/2 upstream's response field): no control byte but HTAB, no DEL,
    /// no SP or HTAB at either end (RFC 9113 §8.2.1). NUL, CR and LF above all: written into an HTTP/1.1 answer they
    /// would split it.
    @inlinable public static func isRelayableValue(_ value: String) -> Bool {
        StringBytes.withBytes(of: value) { bytes in
            if let first = bytes.first, ASCIIByte.isOptionalWhitespace(first) { return false }
            if let last = bytes.last, ASCIIByte.isOptionalWhitespace(last) { return false }
            return !bytes.contains { ($0 < 0x20 && $0 != ASCIIByte.tab) || $0 == 0x7F }
        }
    }
}
