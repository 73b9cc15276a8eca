/// A JWT NumericDate (RFC 7519 §2: seconds since the epoch) as people read it: in the claim checks' refusals and the
/// failure log.
package enum NumericDate {
    /// `YYYY-MM-DDTHH:MM:SSZ` for a NumericDate in `0...253_402_300_799` (`ClaimChecks.maximumNumericDate`), without Foundation
    /// (days-to-civil conversion after Howard Hinnant's `civil_from_days`).
    package static func formatted(_ seconds: Int64) -> String {
        let days = seconds / 86_400
        let secondOfDay = seconds % 86_400
        let shifted = days + 719_468
        let era = shifted / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return "\(padded(year, 4))-\(padded(month, 2))-\(padded(day, 2))T"
            + "\(padded(secondOfDay / 3_600, 2)):\(padded(secondOfDay / 60 % 60, 2)):\(padded(secondOfDay % 60, 2))Z"
    }

    private static func padded(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }
}
