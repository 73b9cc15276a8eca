/// HTTP/2 field names are lower case (RFC 9113 §8.2.1). Most arrive so and are taken as they are;
/// only a name with an upper-case letter is copied.
enum HTTP2FieldName {
    static func lowercased(_ name: String) -> String {
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
    static func isConnectionSpecific(_ lowercasedName: String) -> Bool {
        switch lowercasedName {
        case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade": true
        default: false
        }
    }
}
