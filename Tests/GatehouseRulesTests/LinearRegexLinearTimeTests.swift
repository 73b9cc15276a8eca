import Foundation
import GatehouseTestSupport
import Testing
@testable import GatehouseRules

/// The reason `LinearRegex` exists: patterns that take a backtracking engine exponential time run in one pass, and
/// no pattern or text makes it crash.
struct LinearRegexLinearTimeTests {
    /// Patterns that backtrack catastrophically on a long run of one letter that finally fails to match.
    @Test(arguments: [
        ("(a*)*b", "a"),
        ("(a|aa)*c", "a"),
        ("^(a+)+$", "a"),  // with a trailing "!" below, the classic ReDoS
        ("(x+x+)+y", "x"),
        ("(?:a?){12}a{12}b", "a"),
        (#"^(\w+\s?)*$"#, "a"),
        ("(.*a){8}z", "a"),
    ])
    func pathologicalPatternsRunInLinearTime(pattern: String, letter: String) throws {
        let regex = try LinearRegex(pattern)
        let text = String(repeating: letter, count: 100_000) + "!"
        let clock = ContinuousClock()
        var matched = true
        let elapsed = clock.measure { matched = regex.matches(text) }
        #expect(!matched)
        #expect(elapsed < .seconds(1), "\(pattern): \(elapsed) for 100 001 scalars (\(regex.programSize) instructions)")
    }

    @Test func longMatchingTextsAreFoundToo() throws {
        let text = String(repeating: "a", count: 100_000) + "b"
        #expect(try LinearRegex("(a*)*b").matches(text))
        #expect(try LinearRegex("^(a|aa)*b$").matches(text))
        #expect(try LinearRegex("ab$").matches(text))
    }

    /// The deepest patterns accepted, in every shape that nests, compile and match on a 256 KB stack (half of
    /// macOS's default for secondary threads) in this unoptimised build: the parser and compiler recurse per level.
    @Test func deepestPatternsFitASmallStack() {
        let depth = LinearRegex.Parser.maxNesting
        let patterns = [
            String(repeating: "(", count: depth) + "a" + String(repeating: ")", count: depth),
            String(repeating: "(", count: depth) + "a" + String(repeating: ")*", count: depth),
            String(repeating: "(a|", count: depth) + "b" + String(repeating: ")", count: depth),
            String(repeating: "(?:", count: depth) + "a" + String(repeating: "){1,1}", count: depth),
            String(repeating: "(?:x|(?:y|", count: depth / 2) + "a" + String(repeating: ")*)+", count: depth / 2),
        ]
        let results = Outcomes()
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            results.values = patterns.map { (try? LinearRegex($0))?.matches("ab") ?? false }
            done.signal()
        }
        thread.stackSize = 256 * 1024
        thread.start()
        done.wait()
        #expect(results.values == Array(repeating: true, count: patterns.count))
    }

    /// Random strings over the syntax's own alphabet: every pattern either compiles or throws, and every compiled
    /// pattern matches without trapping. (Gatehouse's fuzzing goes further; this keeps the basics in every test run.)
    @Test func randomPatternsNeverTrap() {
        var random = SplitMix64(seed: 0x5EED)
        let alphabet = Array(#"ab.()[]{}|*+?^$\-,:=!<>PQEdDsSwWbBAzxpk0123789imsU-_é日😀"#.unicodeScalars)
        let texts = ["", "a", "ab\nba", "aaa{,}[]()", "é日😀_-", String(repeating: "ab", count: 50)]
        var compiled = 0
        for _ in 0..<20_000 {
            var pattern = String.UnicodeScalarView()
            for _ in 0..<Int(random.next() % 16) { pattern.append(alphabet[Int(random.next() % UInt64(alphabet.count))]) }
            guard let regex = try? LinearRegex(String(pattern)) else { continue }
            compiled += 1
            #expect(regex.programSize <= LinearRegex.maxProgramSize)
            for text in texts { _ = regex.matches(text) }
        }
        #expect(compiled > 1000)
    }
}

/// The thread's results, handed over through the semaphore (which orders the write before the read).
private final class Outcomes: @unchecked Sendable {
    var values: [Bool] = []
}

