import Foundation
import NIOHTTP1
import Testing
import GatehouseTokens

struct CacheLifetimeTests {
    @Test func maxAgeIsReadAndClamped() {
        let freshFor = CacheLifetime.freshness(of: ["Cache-Control": "public, max-age=19845, must-revalidate"], now: Self.now)
        #expect(freshFor == .seconds(19845))
        #expect(CacheLifetime.refreshInterval(freshFor: .seconds(10), minimum: .seconds(300), maximum: .seconds(86400)) == .seconds(300))
        #expect(CacheLifetime.refreshInterval(freshFor: .seconds(10 << 20), minimum: .seconds(300), maximum: .seconds(86400)) == .seconds(86400))
        #expect(CacheLifetime.refreshInterval(freshFor: nil, minimum: .seconds(300), maximum: .seconds(86400)) == .seconds(86400))
    }

    @Test func expiresIsRelativeToDate() {
        let headers: HTTPHeaders = ["Date": "Sun, 22 Nov 2026 10:00:00 GMT", "Expires": "Sun, 22 Nov 2026 11:00:00 GMT"]
        #expect(CacheLifetime.freshness(of: headers, now: Self.now) == .seconds(3600), "the response's Date, not now")
        let undated: HTTPHeaders = ["Expires": "Sun, 22 Nov 2026 10:30:00 GMT"]
        #expect(CacheLifetime.freshness(of: undated, now: Self.now) == .seconds(1800), "without Date: from when it arrived")
    }

    /// Sun, 22 Nov 2026 10:00:00 GMT.
    static let now = Date(timeIntervalSince1970: 1_795_341_600)

    @Test func noCacheMeansRefreshAtTheFloor() {
        #expect(CacheLifetime.freshness(of: ["Cache-Control": "no-cache"], now: Self.now) == .zero)
        #expect(CacheLifetime.freshness(of: [:], now: Self.now) == nil)
    }

    /// K18: how long a cache on the way held the key set; anything but one non-negative integer is unknown.
    @Test func ageIsReadStrictly() {
        #expect(CacheLifetime.age(of: [:]) == .zero)
        #expect(CacheLifetime.age(of: ["Age": "7200"]) == .seconds(7200))
        #expect(CacheLifetime.age(of: ["Age": " 5 "]) == .seconds(5))
        for bad in ["-1", "1.5", "abc", "1e3", "+3"] { #expect(CacheLifetime.age(of: ["Age": bad]) == nil, "\(bad)") }
        #expect(CacheLifetime.age(of: HTTPHeaders([("Age", "1"), ("Age", "2")])) == nil)
        #expect(CacheLifetime.age(of: ["Age": "99999999999999999999"]) == .seconds(Int64(Int32.max)))
    }
}
