/// How doubles are written and read by `string()` and `double()`.
enum CELFormat {
    /// The shortest decimal that reads back as the same double, in exponent form when the decimal exponent is
    /// below -4 or from 21 on (`1e-05`, `1e+21`), else plain, without a fraction when it has none (`100`, `1.5`,
    /// `-0`): what JavaScript and Go's `%v` write, never the `.0` of Python or Swift. The cel-spec leaves the form open.
    static func double(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value < 0 ? "-Infinity" : "Infinity" }
        let (negative, digits, exponent) = shortestDigits(value)
        let sign = negative ? "-" : ""
        if exponent < -4 || exponent >= 21 {
            let fraction = digits.count > 1 ? "." + digits.dropFirst() : ""
            let magnitude = String(abs(exponent))
            return sign + digits.prefix(1) + fraction + (exponent < 0 ? "e-" : "e+") + (magnitude.count < 2 ? "0" : "") + magnitude
        }
        if exponent < 0 { return sign + "0." + String(repeating: "0", count: -exponent - 1) + digits }
        if digits.count <= exponent + 1 { return sign + digits + String(repeating: "0", count: exponent + 1 - digits.count) }
        return sign + digits.prefix(exponent + 1) + "." + digits.dropFirst(exponent + 1)
    }

    /// The significant digits of Swift's shortest round-trip description (no leading or trailing zeros; "0" for
    /// zero) and the decimal exponent of the first: 1.5e+300 is ("15", 300), 0.001 is ("1", -3).
    private static func shortestDigits(_ value: Double) -> (negative: Bool, digits: String, exponent: Int) {
        let text = value.magnitude.description  // e.g. "1.5e+300", "0.001", "100.0", "5e-324"
        var mantissa = Substring(text), exponent = 0
        if let e = text.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            mantissa = text[..<e]
            exponent = Int(text[text.index(after: e)...]) ?? 0
        }
        let parts = mantissa.split(separator: ".", omittingEmptySubsequences: false)
        let whole = String(parts[0]), fraction = parts.count > 1 ? String(parts[1]) : ""
        var digits = whole + fraction
        exponent += whole.count - 1
        while digits.count > 1 && digits.hasPrefix("0") {
            digits.removeFirst()
            exponent -= 1
        }
        while digits.count > 1 && digits.hasSuffix("0") { digits.removeLast() }
        return (value.sign == .minus, digits, digits == "0" ? 0 : exponent)
    }

    /// A decimal number, `Infinity`, `-Infinity` or `NaN`.
    static func parseDouble(_ text: String) -> Double? {
        Double(text)
    }
}
