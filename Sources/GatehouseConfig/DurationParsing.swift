extension Duration {
    /// Parses a configuration duration: a non-negative integer immediately followed by one of the units
    /// `ms`, `s`, `m`, `h` (`"500ms"`, `"30s"`, `"5m"`, `"24h"`, `"0s"`).
    ///
    /// Returns nil for anything else: empty text, a sign, a fraction, spaces, an unknown or missing unit,
    /// or an amount whose milliseconds do not fit in 64 bits. Strict on purpose: `"1.5h"` or `"5 m"` in a
    /// security setting is more likely a mistake than an intent.
    public static func parseConfig(_ text: String) -> Duration? {
        let digits = text.utf8.prefix { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
        guard !digits.isEmpty else { return nil }
        let unit = String(decoding: text.utf8.dropFirst(digits.count), as: UTF8.self)
        let millisecondsPerUnit: Int64
        switch unit {
        case "ms": millisecondsPerUnit = 1
        case "s": millisecondsPerUnit = 1000
        case "m": millisecondsPerUnit = 60_000
        case "h": millisecondsPerUnit = 3_600_000
        default: return nil
        }
        guard let amount = Int64(String(decoding: digits, as: UTF8.self)) else { return nil }
        let (milliseconds, overflow) = amount.multipliedReportingOverflow(by: millisecondsPerUnit)
        guard !overflow else { return nil }
        return .milliseconds(milliseconds)
    }

    /// The shortest exact configuration spelling of this duration (`"90s"`, `"5m"`), for messages and summaries.
    var configDescription: String {
        let milliseconds = components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
        for (unit, size) in [("h", Int64(3_600_000)), ("m", 60_000), ("s", 1000)] where milliseconds % size == 0 && milliseconds != 0 {
            return "\(milliseconds / size)\(unit)"
        }
        return milliseconds == 0 ? "0s" : "\(milliseconds)ms"
    }
}
