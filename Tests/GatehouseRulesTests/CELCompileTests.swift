import Foundation
import Testing
import GatehouseSyntax
@testable import GatehouseRules

/// What is refused at load (issue 44): syntax errors, unknown names and functions, operand types that fit no
/// overload, a rule that can never be bool, and a rule whose cost has no bound under the limit.
struct CELCompileTests {
    static let refused: [(String, CELProgram.Purpose, String)] = [
        ("claims.a ==", .rule, "unexpected end of expression"),
        ("claims.a = 1", .rule, "unexpected character ="),
        ("'unterminated", .rule, "unterminated string"),
        ("'\\q'", .rule, "invalid escape \\q"),
        ("9223372036854775808", .rule, "integer literal out of range"),
        ("user.admin", .rule, "undeclared reference to 'user'"),
        ("lower(claims.a) == 'x'", .rule, "unknown function 'lower'"),
        ("claims.a.lowerAscii() == 'x'", .rule, "unknown method 'lowerAscii'"),
        ("request.cookies == 'x'", .rule, "request has no field 'cookies'"),
        ("1 + 'a' == 2", .rule, "no matching overload for '+' applied to (int, string)"),
        ("'abc'.startsWith(1)", .rule, "no matching overload for 'startsWith' applied to (string, int)"),
        ("1 < 'a'", .rule, "no matching overload for '<'"),
        ("claims.sub", .rule, ""),  // dyn: may be bool at run time, so it loads
        ("claims.level + 1", .rule, "a rule must be bool, and this one is always int"),
        ("size(claims.groups)", .rule, "a rule must be bool, and this one is always int"),
        ("'x'", .rule, "a rule must be bool, and this one is always string"),
        ("b'x'", .headerValue, "a header value is a string, a number, a bool or a list of those"),
        ("{'a': 1}.filter(k, true)", .headerValue, ""),  // a map's keys: a list, which a header may carry
        ("claims.g.exists(1, true)", .rule, "the first argument of exists() is the variable's name"),
        ("claims.g.exists(x, 1)", .rule, "the condition of exists() must be bool"),
        ("has(claims)", .rule, "has() takes a field selection"),
        ("Msg{a: 1}", .rule, "message construction"),
        ("claims.a.matches('(a)\\\\1')", .rule, "invalid pattern"),
        ("{[1]: 2}.size() == 1", .rule, "a map key must be int, uint, bool or string"),
        (String(repeating: "(", count: 80) + "true" + String(repeating: ")", count: 80), .rule, "nested more than"),
    ]

    @Test(arguments: refused)
    func refusedAtLoad(_ testCase: (String, CELProgram.Purpose, String)) {
        do {
            _ = try CELTestSupport.compile(testCase.0, purpose: testCase.1)
            #expect(testCase.2.isEmpty, "\(testCase.0) loaded")
        } catch {
            #expect(!testCase.2.isEmpty && error.message.contains(testCase.2), "\(testCase.0): \(error)")
        }
    }

    /// One pass over a claim list is ordinary; a pass inside a pass over claims, or three deep, has no bound.
    @Test func costWithoutABoundIsRefusedAtLoad() throws {
        _ = try CELTestSupport.compile("claims.groups.exists(g, g == 'admin' || g.startsWith('ops-') || g.endsWith('-admins'))", purpose: .rule)
        _ = try CELTestSupport.compile("claims.teams.exists(t, t.members.exists(m, m == claims.sub))", purpose: .rule)
        _ = try CELTestSupport.compile("claims.groups.exists(g, ['a', 'b', 'c'].exists(x, x == g))", purpose: .rule)
        for source in [
            "claims.groups.exists(a, claims.groups.exists(b, a == b))",
            "claims.groups.exists(a, claims.groups.exists(b, claims.groups.exists(c, a == b && b == c)))",
            "claims.groups.map(a, claims.groups.map(b, claims.groups.map(c, c))).size() > 0",
        ] {
            #expect(throws: CELCompileError.self, "\(source)") { try CELTestSupport.compile(source, purpose: .rule) }
        }
        let error = #expect(throws: CELCompileError.self) {
            try CELTestSupport.compile("claims.groups.exists(a, claims.groups.exists(b, a == b))", purpose: .rule)
        }
        #expect(error?.message.contains("cost has no bound") == true, "\(String(describing: error))")
    }

    /// At run time the same units are counted: a triply nested macro over a 300-entry claim list (27 million steps)
    /// is stopped at the limit and is an error (a rule's error denies), in well under a second.
    @Test func costIsBoundedAtRunTime() throws {
        // A request head of 8 bytes makes every collection "at most 3 long" at load, so the rule loads; the token then
        // holds 300 entries, which only the run-time count can see.
        let program = try CELTestSupport.compile(
            "claims.groups.exists(a, claims.groups.exists(b, claims.groups.exists(c, a + b + c == 'never')))", purpose: .rule, maxHeaderBytes: 8)
        var claims = CELTestSupport.claims
        claims["groups"] = .array((0..<300).map { .string("group-\($0)") })
        let clock = ContinuousClock()
        var result: Result<CELValue, CELEvaluationError>?
        let elapsed = clock.measure { result = program.evaluate(CELTestSupport.activation(claims: claims)) }
        guard case .failure(let error) = result else {
            Issue.record("not stopped: \(String(describing: result))")
            return
        }
        #expect(error.isCostLimit, "\(error)")
        #expect(elapsed < .milliseconds(500), "\(elapsed)")
        // The same rule over three entries finishes (false: no triple spells "never").
        claims["groups"] = .array([.string("a"), .string("b"), .string("c")])
        #expect(try program.evaluate(CELTestSupport.activation(claims: claims)).get().isTrue == false)
    }

    /// The cost limit is never absorbed by `||`, `&&`, `all` or `exists`, which absorb other errors.
    @Test func theCostLimitIsNotAbsorbed() throws {
        let program = try CELTestSupport.compile(
            "true || claims.groups.exists(a, claims.groups.exists(b, a == b + 'x'))", purpose: .rule, maxHeaderBytes: 8)
        #expect(try program.evaluate(CELTestSupport.activation()).get().isTrue, "|| short-circuits on true at the left")
        let reversed = try CELTestSupport.compile(
            "claims.groups.exists(a, claims.groups.exists(b, a == b + 'x')) || true", purpose: .rule, maxHeaderBytes: 8)
        var claims = CELTestSupport.claims
        claims["groups"] = .array((0..<2000).map { .string("g\($0)") })
        guard case .failure(let error) = reversed.evaluate(CELTestSupport.activation(claims: claims)) else {
            Issue.record("the cost limit was absorbed by ||")
            return
        }
        #expect(error.isCostLimit)
    }
}
