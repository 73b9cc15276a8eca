import Testing
@testable import GatehouseConfig

struct DurationParsingTests {
    @Test(arguments: [
        ("500ms", Duration.milliseconds(500)),
        ("30s", .seconds(30)),
        ("5m", .seconds(300)),
        ("24h", .seconds(86400)),
        ("0s", .zero),
        ("0ms", .zero),
        ("007s", .seconds(7)),
        ("72h", .seconds(72 * 3600)),
    ])
    func parsesWholeAmountsWithAUnit(text: String, expected: Duration) {
        #expect(Duration.parseConfig(text) == expected)
    }

    @Test(arguments: [
        "", "s", "30", "-5s", "+5s", "1.5h", "5 m", " 5m", "5m ", "5M", "5sec", "5d", "5us", "ms5", "5s5",
        "٣s",  // Arabic-Indic digit: only ASCII digits count
        "99999999999999999999s",  // does not fit in 64 bits
        "9223372036854775807h",  // fits, but not once converted to milliseconds
    ])
    func rejectsAnythingElse(text: String) {
        #expect(Duration.parseConfig(text) == nil)
    }

    @Test func acceptsTheLargestAmountThatFitsInMilliseconds() {
        #expect(Duration.parseConfig("\(Int64.max)ms") == .milliseconds(Int64.max))
        #expect(Duration.parseConfig("\(Int64.max / 1000)s") == .seconds(Int64.max / 1000))
        #expect(Duration.parseConfig("\(Int64.max / 1000 + 1)s") == nil)
    }

    @Test(arguments: [("90s", "90s"), ("5m", "5m"), ("24h", "24h"), ("1500ms", "1500ms"), ("0s", "0s"), ("120m", "2h")])
    func configDescriptionIsTheShortestExactSpelling(text: String, expected: String) throws {
        let duration = try #require(Duration.parseConfig(text))
        #expect(duration.configDescription == expected)
    }
}
