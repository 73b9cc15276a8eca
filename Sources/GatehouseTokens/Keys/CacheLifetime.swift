package import Foundation
package import NIOHTTP1

/// How long a fetched JWKS may be used before the next scheduled refresh, from its response headers.
package enum CacheLifetime {
    /// `Cache-Control: max-age` (or `s-maxage`) wins; else `Expires` relative to `Date` (or `now`, when the response
    /// arrived); `no-cache`/`no-store` mean zero (the caller clamps to `min_refresh`); nil when none is given.
    package static func freshness(of headers: HTTPHeaders, now: Date) -> Duration? {
        var sawNoCache = false
        for value in headers[canonicalForm: "cache-control"] {
            let directive = value.lowercased().trimmingCharacters(in: .whitespaces)
            if directive == "no-cache" || directive == "no-store" { sawNoCache = true }
            for prefix in ["max-age=", "s-maxage="] where directive.hasPrefix(prefix) {
                if let seconds = Int64(directive.dropFirst(prefix.count).trimmingCharacters(in: CharacterSet(charactersIn: "\""))),
                    seconds >= 0
                {
                    return .seconds(seconds)
                }
            }
        }
        if sawNoCache { return .zero }
        guard let expires = headers.first(name: "expires"), let expiry = httpDate(expires) else { return nil }
        let reference = headers.first(name: "date").flatMap(httpDate) ?? now
        return .seconds(max(0, Int64(expiry.timeIntervalSince(reference))))
    }

    /// The response's `Age` (RFC 9111 §5.1: one non-negative integer of seconds): zero without the
    /// header, nil when it is there but is not that (several values, a sign, a fraction, text).
    package static func age(of headers: HTTPHeaders) -> Duration? {
        let values = headers[canonicalForm: "age"]
        guard !values.isEmpty else { return .zero }
        guard values.count == 1, let text = values.first?.trimmingCharacters(in: .whitespaces), !text.isEmpty,
              text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
        else { return nil }
        // A number too large for 64 bits is an age older than any key: the document says nothing of today.
        return .seconds(Int64(text) ?? Int64(Int32.max))
    }

    private static func httpDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: text)
    }

    /// The refresh interval: the response's freshness clamped to `[minimum, maximum]`, `maximum` without one.
    package static func refreshInterval(freshFor: Duration?, minimum: Duration, maximum: Duration) -> Duration {
        guard let freshFor else { return maximum }
        return min(max(freshFor, minimum), maximum)
    }
}
