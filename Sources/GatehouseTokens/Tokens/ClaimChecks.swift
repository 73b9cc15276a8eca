public import GatehouseSyntax
public import GatehouseVocabulary

/// Pure checks on the claims of a token whose signature has verified (RFC 7519 §4.1).
public enum ClaimChecks {
    /// The largest NumericDate accepted: 9999-12-31T23:59:59Z. Anything later is a bug or an attack,
    /// and keeping the range small keeps all the arithmetic below far from overflow.
    public static let maximumNumericDate: Int64 = 253_402_300_799

    /// Checks `exp` (required), `nbf` and `iat` against `now`, allowing `leeway` seconds of clock skew.
    ///
    /// - `exp` missing, or `exp + leeway <= now`: `expired`.
    /// - `nbf` or `iat` later than `now + leeway`: `not_yet_valid`.
    /// - any of the three not an integer JSON number in `0...maximumNumericDate`: `invalid_claims`.
    /// - Parameters:
    ///   - now: Current time in Unix seconds.
    ///   - leeway: Allowed clock skew in seconds; a negative value counts as zero.
    public static func checkTimes(_ claims: some JSONMembers, now: Int64, leeway: Int64) throws(AuthFailure) {
        let leeway = max(0, leeway)
        let latestAcceptable = saturatingSum(now, leeway)
        guard let expValue = claims["exp"] else { throw AuthFailure(.expired, "exp missing") }
        let exp = try numericDate(expValue, name: "exp")
        if saturatingSum(exp, leeway) <= now {
            throw AuthFailure(.expired, "exp \(NumericDate.formatted(exp)) is \(secondsBetween(exp, now))s in the past")
        }
        if let value = claims["nbf"] {
            let nbf = try numericDate(value, name: "nbf")
            if nbf > latestAcceptable {
                throw AuthFailure(.notYetValid, "nbf \(NumericDate.formatted(nbf)) is \(secondsBetween(now, nbf))s in the future")
            }
        }
        if let value = claims["iat"] {
            let iat = try numericDate(value, name: "iat")
            if iat > latestAcceptable {
                throw AuthFailure(.notYetValid, "iat \(NumericDate.formatted(iat)) is \(secondsBetween(now, iat))s in the future")
            }
        }
    }

    /// The token's audiences: `aud` as a string, or a non-empty array of strings (RFC 7519 §4.1.3).
    /// Missing, `[]`, or anything else is `wrong_audience`.
    public static func audiences(_ claims: some JSONMembers) throws(AuthFailure) -> [String] {
        switch claims["aud"] {
        case .string(let audience)?:
            return [audience]
        case .array(let elements)?:
            guard !elements.isEmpty else { throw AuthFailure(.wrongAudience, "aud is an empty array") }
            var audiences: [String] = []
            audiences.reserveCapacity(elements.count)
            for element in elements {
                guard case .string(let audience) = element else {
                    throw AuthFailure(.wrongAudience, "aud contains a value that is not a string")
                }
                audiences.append(audience)
            }
            return audiences
        case nil:
            throw AuthFailure(.wrongAudience, "aud missing")
        default:
            throw AuthFailure(.wrongAudience, "aud is neither a string nor an array of strings")
        }
    }

    /// A string claim. Present but not a string (including `null`) is `invalid_claims`, as is a
    /// missing claim when `required`.
    public static func string(_ name: String, in claims: some JSONMembers, required: Bool) throws(AuthFailure) -> String? {
        guard let value = claims[name] else {
            if required { throw AuthFailure(.invalidClaims, "\(name) missing") }
            return nil
        }
        guard case .string(let text) = value else { throw AuthFailure(.invalidClaims, "\(name) is not a string") }
        return text
    }

    /// A NumericDate claim's value: a whole number of seconds in `0...maximumNumericDate`, else `invalid_claims`.
    package static func numericDate(_ value: JSONValue, name: String) throws(AuthFailure) -> Int64 {
        guard case .number = value else { throw AuthFailure(.invalidClaims, "\(name) is not a number") }
        // integerValue refuses fractions and exponents, so 1.5, 1e3 and 1e300 all land here.
        guard let seconds = value.integerValue, seconds >= 0, seconds <= maximumNumericDate else {
            throw AuthFailure(.invalidClaims, "\(name) is not a whole number of seconds in 0...\(maximumNumericDate)")
        }
        return seconds
    }

    private static func saturatingSum(_ a: Int64, _ b: Int64) -> Int64 {
        let (sum, overflow) = a.addingReportingOverflow(b)
        if overflow { return b > 0 ? .max : .min }
        return sum
    }

    private static func secondsBetween(_ earlier: Int64, _ later: Int64) -> Int64 {
        let (difference, overflow) = later.subtractingReportingOverflow(earlier)
        return overflow ? .max : difference
    }
}
