import Testing
import GatehouseSyntax
@testable import GatehouseRules

/// The evaluator's semantics, case by case (cel-spec langdef); the differential test compares with two other
/// implementations on generated expressions.
struct CELEvaluationTests {
    static let cases: [(String, String)] = [
        // Literals of every form.
        ("1", "1"), ("-9223372036854775808", "-9223372036854775808"), ("0x1F", "31"), ("1u", "1u"), ("0xFFu", "255u"),
        ("1.5", "double(1.5)"), ("1e3", "double(1000)"), (".5", "double(0.5)"), ("\"a\\tb\"", "\"a\tb\""), ("'\\u00e9'", "\"é\""),
        ("r'\\d'", "\"\\d\""), ("'''a\nb'''", "\"a\nb\""), ("b'\\xff\\x00'", "b[255, 0]"), ("b'é'", "b[195, 169]"), ("null", "null"),
        ("[1, 'a', true]", "[1, \"a\", true]"), ("{'a': 1, 2: 'b'}", "{\"a\": 1, 2: \"b\"}"), ("'\\101'", "\"A\""), ("[1, 2,]", "[1, 2]"),
        // Heterogeneous numeric equality and ordering.
        ("3 == 3.0", "true"), ("1 == 1u", "true"), ("1u < 2", "true"), ("-1 < 1u", "true"), ("2.5 > 2", "true"), ("0.0/0.0 == 0.0/0.0", "false"),
        ("1 == 'a'", "false"), ("[1, 2] == [1.0, 2u]", "true"), ("{'a': 1} == {'a': 1.0}", "true"), ("null == null", "true"),
        // Strings count code points and compare bytes.
        ("size('café')", "4"), ("size(claims.name)", "4"), ("'café'.size()", "4"), ("size(b'caf\\xc3\\xa9')", "5"), ("'a' < 'b'", "true"),
        ("'abc'.startsWith('ab')", "true"), ("'abc'.endsWith('bc')", "true"), ("'abc'.contains('')", "true"), ("'abc'.contains('bd')", "false"),
        ("'é' == 'e\\u0301'", "false"),
        // The commutative && and || over errors.
        ("claims.missing == 1 || true", "true"), ("true || claims.missing == 1", "true"), ("false && claims.missing", "false"),
        ("claims.missing && false", "false"), ("claims.missing == 1 && true", "error: no such key: missing"),
        ("dyn(1) || false", "error: no such overload: || on (int)"),
        ("1 || false", "compile error: no matching overload for '_||_' applied to (int, bool)"), ("true ? 1 : claims.missing", "1"),
        // Presence: has() is true for a present null.
        ("has(claims.nothing)", "true"), ("has(claims.absent)", "false"), ("claims.nothing == null", "true"), ("has(claims.org.id)", "true"),
        ("has(claims.sub.x)", "error: has() on string"),
        // Claims as CEL sees JSON.
        ("type(claims.level)", "int"), ("type(claims.ratio)", "double"), ("type(claims.big)", "double"), ("claims.org.id + 1", "43"),
        ("claims.groups[1]", "\"admin\""), ("claims.groups[3]", "error: index out of range: 3 of a list of 3"), ("claims['tenant']", "\"acme\""),
        ("type(claims.groups)", "list"), ("type(claims.org)", "map"), ("type(null)", "null_type"), ("type(type(1))", "type"),
        // Arithmetic: checked.
        ("9223372036854775807 + 1", "error: int overflow"), ("0u - 1u", "error: uint overflow"), ("1 / 0", "error: division by zero"),
        ("1 % 0", "error: modulus by zero"), ("-9223372036854775808 / -1", "error: int overflow"), ("-9223372036854775808 % -1", "error: int overflow"),
        ("1.0 / 0.0", "double(Infinity)"), ("7 / 2", "3"), ("-7 % 3", "-1"), ("'a' + 'b'", "\"ab\""), ("[1] + [2]", "[1, 2]"),
        ("b'a' + b'b'", "b[97, 98]"), ("claims.level + 1.0", "error: no such overload: + on (int, double)"),
        // in, indexing, maps.
        ("'admin' in claims.groups", "true"), ("'root' in claims.groups", "false"), ("'tenant' in claims", "true"), ("1.0 in [1]", "true"),
        ("{1: 'a'}[1u]", "\"a\""), ("{1: 'a'}[1.0]", "\"a\""), ("{'a': 1}['b']", "error: no such key: 'b'"), ("[1, 2][1u]", "2"),
        ("{'a': 1, 'a': 2}", "error: a map key twice, or of a type no key has (string)"),
        // Macros.
        ("claims.groups.exists(g, g == 'admin')", "true"), ("claims.groups.all(g, size(g) >= 3)", "true"),
        ("claims.groups.exists_one(g, g.startsWith('a'))", "true"), ("claims.groups.map(g, g + '!')", "[\"dev!\", \"admin!\", \"ops!\"]"),
        ("claims.groups.map(g, g != 'dev', size(g))", "[5, 3]"), ("claims.groups.filter(g, g > 'c')", "[\"dev\", \"ops\"]"),
        ("[1, 0].all(x, 1 / x > 0)", "error: division by zero"), ("[0, 1].exists(x, 1 / x > 0)", "true"), ("[0, -1].all(x, 1 / x > 0)", "false"),
        ("[0, 1].exists_one(x, 1 / x > 0)", "error: division by zero"), ("{'a': 1, 'b': 2}.map(k, k)", "[\"a\", \"b\"]"),
        ("[[1, 2], [3]].exists(l, l.exists(x, x == 3))", "true"), ("{'a': 1, 'b': 2}.filter(k, k != 'a')", "[\"b\"]"), ("claims.org.tags.all(t, false)", "true"),
        // Conversions.
        ("int('42')", "42"), ("int('x')", "error: cannot convert 'x' to int"), ("int(1e20)", "error: 1e+20 is out of int's range"),
        ("int(-1.9)", "-1"), ("uint(-1)", "error: -1 is out of uint's range"), ("uint(3.7)", "3u"), ("double(2)", "double(2)"),
        ("string(b'\\xff')", "error: bytes are not UTF-8"), ("string(42u)", "\"42\""), ("string(true)", "\"true\""), ("bytes('é')", "b[195, 169]"),
        ("bool('true')", "true"), ("bool('yes')", "error: cannot convert 'yes' to bool"), ("dyn(1) == 1.0", "true"), ("type(1) == int", "true"),
        ("type('a') == string", "true"), ("type(1u) != uint", "false"), ("int(uint(5))", "5"),
        // The request.
        ("request.method", "\"GET\""), ("request.path.startsWith('/v1/')", "true"), ("request.host", "\"api.example.com\""),
        ("request.headers['x-org'] == claims.tenant", "true"), ("request.headers['accept']", "\"a,b\""), ("'x-org' in request.headers", "true"),
        ("request.headers['X-Org']", "error: no such key: 'X-Org'"), ("has(request.headers.missing)", "false"),
        ("request.method in ['GET', 'HEAD']", "true"),
        // RE2 patterns, literal, partial matches.
        ("'abc'.matches('b')", "true"), ("matches('abc', '^b')", "false"), ("claims.sub.matches('^user-[0-9]+$')", "true"),
        ("claims.name.matches('^caf.$')", "true"), ("claims.sub.matches(claims.tenant)", "compile error: the pattern of matches() must be a literal string (it is compiled and checked at load)"),
    ]

    @Test(arguments: cases)
    func evaluates(_ testCase: (String, String)) {
        #expect(CELTestSupport.run(testCase.0) == testCase.1, "\(testCase.0)")
    }

    @Test func errorsAndNonBoolsDenyARule() throws {
        let program = try CELTestSupport.compile("claims.level > 2 && claims.groups.exists(g, g == 'admin')", purpose: .rule)
        #expect(try program.evaluate(CELTestSupport.activation()).get().isTrue)
        var claims = CELTestSupport.claims
        claims["level"] = .string("high")
        #expect(throws: CELEvaluationError.self) { try program.evaluate(CELTestSupport.activation(claims: claims)).get() }
    }
}

extension CELValue {
    var isTrue: Bool {
        if case .bool(true) = self { return true }
        return false
    }
}

/// `string(double)`: shortest round trip, exponent form below 1e-4 and from 1e21.
struct CELFormatTests {
    @Test(arguments: [
        (100.0, "100"), (1e6, "1000000"), (1.5, "1.5"), (0.0001, "0.0001"), (0.00001, "1e-05"), (1e21, "1e+21"), (1e20, "100000000000000000000"),
        (1.5e300, "1.5e+300"), (-0.0, "-0"), (0.0, "0"), (0.1 + 0.2, "0.30000000000000004"), (123456789.0, "123456789"), (Double.leastNonzeroMagnitude, "5e-324"),
        (-2.5e-7, "-2.5e-07"), (1e16, "10000000000000000"), (12.25, "12.25"), (0.5, "0.5"),
    ])
    func doublesAreWrittenShortest(_ testCase: (Double, String)) {
        #expect(CELFormat.double(testCase.0) == testCase.1, "\(testCase.0)")
    }
}
