/// `application/x-www-form-urlencoded` (WHATWG URL §5): encode one value, decode a body's pairs.
public enum FormEncoding {
    /// Unreserved bytes stay, space becomes `+`, everything else `%XX`.
    public static func encode(_ value: String) -> String {
        var out = ""
        out.reserveCapacity(value.utf8.count)
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "*"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: " "):
                out += "+"
            default:
                out += "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 0xF, radix: 16, uppercase: true)
            }
        }
        return out
    }

    public struct Invalid: Error {}

    /// The first value of `name`, or nil when absent; throws when that value is not valid
    /// percent-encoding or UTF-8 (a value that cannot be read must not be taken for an absent one).
    public static func value(named name: String, in body: [UInt8]) throws(Invalid) -> String? {
        for pair in body.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let parts = pair.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            guard let key = decode(parts[0]), key == name else { continue }
            guard parts.count == 2 else { return "" }
            guard let value = decode(parts[1]) else { throw Invalid() }
            return value
        }
        return nil
    }

    private static func decode(_ bytes: ArraySlice<UInt8>) -> String? {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "+") {
                out.append(UInt8(ascii: " "))
            } else if byte == ASCIIByte.percent {
                guard let decoded = ASCIIByte.percentDecoded(bytes, at: index) else { return nil }
                out.append(decoded)
                index += 2
            } else {
                out.append(byte)
            }
            index += 1
        }
        return String(validating: out, as: UTF8.self)
    }
}
