import TOMLKit

/// A byte count of the configuration: an integer, or a string of a whole number with a `KiB` or `MiB` suffix
/// (`"64KiB"`, `"1MiB"`); a bare number in a string is bytes. Nil for anything else (a sign, a fraction, spaces,
/// other units, an overflow).
enum ByteCountParsing {
    static func parse(_ text: String) -> Int? {
        let digits = text.utf8.prefix { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
        guard !digits.isEmpty, let amount = Int(String(decoding: digits, as: UTF8.self)) else { return nil }
        let unit = String(decoding: text.utf8.dropFirst(digits.count), as: UTF8.self)
        let multiplier: Int
        switch unit {
        case "": multiplier = 1
        case "KiB": multiplier = 1 << 10
        case "MiB": multiplier = 1 << 20
        default: return nil
        }
        let (bytes, overflow) = amount.multipliedReportingOverflow(by: multiplier)
        return overflow ? nil : bytes
    }
}

extension TOMLReader {
    /// A byte count (`ByteCountParsing`) within `range`.
    func byteCount(_ key: String, in range: ClosedRange<Int>) -> Int? {
        guard let value = value(key) else { return nil }
        let bytes: Int?
        if let integer = value.int {
            bytes = integer
        } else if let text = value.string {
            bytes = ByteCountParsing.parse(text)
            if bytes == nil {
                report(key, "\(ConfigKeyPath.quoted(text)) is not a byte count: an integer, or a whole number with KiB or MiB (\"64KiB\")")
                return nil
            }
        } else {
            sink.add(.wrongType(keyPath(key), expected: "a byte count (an integer, or a string such as \"64KiB\")", found: Self.typeName(value.type)))
            return nil
        }
        guard let bytes, range.contains(bytes) else {
            report(key, "must be between \(range.lowerBound) and \(range.upperBound) bytes")
            return nil
        }
        return bytes
    }
}
