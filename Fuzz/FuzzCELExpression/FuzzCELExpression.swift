// libFuzzer target for the rules' CEL (Fuzz/README.md): CELLexer, CELParser, CELCompiler, CELEvaluator, and the
// RE2-syntax LinearRegex behind `matches`.
//
// Input: an expression's text (bytes that are not UTF-8 are replaced, as a configuration file's reader would refuse
// them anyway); or, after a first line `re:`, a pattern. Refusals (CELCompileError, LinearRegex.SyntaxError) are
// expected. Besides "no crash, no hang", it checks:
// - a refusal's position lies within the text;
// - an accepted expression evaluates over a fixed token and request to a value or an error without trapping,
//   within the cost limit (the evaluator's budget never goes below zero without an error);
// - an accepted pattern matches the same texts on a second compilation (deterministic).
import NIOHTTP1
@testable import Gatehouse
import FuzzSupport
import GatehouseSyntax
@testable import GatehouseRules

private let claims: [String: JSONValue] = [
    "sub": .string("user-1"), "groups": .array([.string("a"), .string("b"), .string("é")]), "level": .number("3"),
    "ratio": .number("1.5"), "n": .null, "org": .object(["id": .number("7")]),
]
private let activation = CELActivation(
    claims: claims, method: "GET", path: "/a/b", host: "api.example.com", headers: HTTPHeaders([("x-org", "acme")]))
private let texts = ["", "a", "abc", "user-1", "é日😀", "a\nb", String(repeating: "ab", count: 40)]

/// One input (libFuzzer's entry point calls it, Fuzz/Entry/FuzzCELExpression; FuzzReplayTests replays the seeds through it).
public func fuzzCELExpression(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    if text.hasPrefix("re:\n") {
        let pattern = String(text.dropFirst(4))
        let regex: LinearRegex
        do {
            regex = try LinearRegex(pattern)
        } catch {
            if printOutcome { print(error) }
            return 0
        }
        let again = try? LinearRegex(pattern)
        for sample in texts {
            let matched = regex.matches(sample)
            require(again?.matches(sample) == matched, "a second compilation of \(pattern) matches \(sample) differently")
        }
        return 0
    }
    let program: CELProgram
    do {
        program = try CELProgram(text, purpose: .anyValue, cost: CELCost(maxHeaderBytes: 16384))
    } catch {
        if printOutcome { print(error) }
        require(error.position >= 0 && error.position <= text.unicodeScalars.count, "position \(error.position) outside \(text.unicodeScalars.count)")
        return 0
    }
    let outcome = program.evaluate(activation)
    if printOutcome { print(outcome) }
    return 0
}
