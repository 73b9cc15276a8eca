import Testing
@testable import GatehouseSyntax

struct StrictJSONTests {
    private func parse(_ text: String, maxDepth: Int = 32) throws(StrictJSONError) -> JSONValue {
        try StrictJSON.parse(Array(text.utf8), maxDepth: maxDepth)
    }

    private func error(_ bytes: [UInt8], maxDepth: Int = 32) -> StrictJSONError? {
        do {
            _ = try StrictJSON.parse(bytes, maxDepth: maxDepth)
            return nil
        } catch {
            return error
        }
    }

    private func error(_ text: String, maxDepth: Int = 32) -> StrictJSONError? {
        error(Array(text.utf8), maxDepth: maxDepth)
    }

    @Test func parsesEveryKindOfValue() throws {
        let value = try parse(#"{"s":"x","n":-1.5e3,"t":true,"f":false,"z":null,"a":[1,"2",[]],"o":{"k":{}}}"#)
        #expect(value == .object([
            "s": .string("x"), "n": .number("-1.5e3"), "t": .bool(true), "f": .bool(false), "z": .null,
            "a": .array([.number("1"), .string("2"), .array([])]), "o": .object(["k": .object([:])]),
        ]))
        #expect(try parse("42") == .number("42"))
        #expect(try parse(#""top""#) == .string("top"))
    }

    @Test func allowsWhitespaceAroundAndBetweenTokens() throws {
        let value = try parse(" \t\r\n{ \"a\" :\n[ 1 , 2 ] }\n ")
        #expect(value == .object(["a": .array([.number("1"), .number("2")])]))
    }

    @Test(arguments: ["", "   ", "{", "[", "{\"a\"", "{\"a\":", "{\"a\":1", "[1", "\"abc", "tru", "nul"])
    func rejectsTruncatedDocuments(_ text: String) {
        #expect(error(text) != nil)
    }

    @Test(arguments: [
        "{} x", "{}{}", "[1,]", "{\"a\":1,}", "[,1]", "{,}", "/* c */ {}", "{} // c", "{'a':1}", "{a:1}",
        "[1 2]", "{\"a\" 1}", "True", "NaN", "Infinity", "[undefined]", "\u{FEFF}{}", "\u{0B}{}",
    ])
    func rejectsAnythingButStrictJSON(_ text: String) {
        #expect(error(text) != nil)
    }

    @Test func rejectsDuplicateMemberNames() {
        #expect(error(#"{"a":1,"a":2}"#) == StrictJSONError("duplicate member name \"a\"", offset: 7))
        #expect(error(#"{"a":1,"a":1}"#) != nil)
        #expect(error(#"{"alg":"RS256","x":{"y":1},"alg":"none"}"#) != nil)
        #expect(error(#"{"o":{"k":1,"k":2}}"#) != nil)
    }

    @Test func comparesMemberNamesAfterUnescaping() {
        #expect(error(#"{"alg":1,"\u0061lg":2}"#) != nil)
        #expect(error(#"{"a\/b":1,"a/b":2}"#) != nil)
        #expect(error(#"{"\ud83d\ude00":1,"😀":2}"#) != nil)
    }

    @Test func allowsTheSameNameInDifferentObjects() throws {
        let value = try parse(#"{"a":{"a":1},"b":[{"a":2},{"a":3}]}"#)
        #expect(value.value(atPath: "a.a") == .number("1"))
    }

    @Test func survivesTenThousandNestedArrays() {
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        #expect(error(deep)?.message == "nesting deeper than 32")
    }

    @Test func survivesTenThousandNestedObjects() {
        let deep = String(repeating: #"{"a":"#, count: 10_000) + "1" + String(repeating: "}", count: 10_000)
        #expect(error(deep)?.message == "nesting deeper than 32")
    }

    @Test func parsesDeepNestingWhenTheLimitAllowsIt() throws {
        // Kept moderate: freeing a deeply nested JSONValue is recursive in the Swift runtime.
        let depth = 10_000
        let deep = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        var value = try parse(deep, maxDepth: depth)
        var levels = 0
        while case .array(let elements) = value, let first = elements.first {
            levels += 1
            value = first
        }
        #expect(levels == depth - 1)
    }

    @Test func enforcesTheDepthLimitExactly() {
        let atLimit = String(repeating: "[", count: 32) + String(repeating: "]", count: 32)
        let overLimit = "[" + atLimit + "]"
        #expect(error(atLimit) == nil)
        #expect(error(overLimit) != nil)
        #expect(error("{}", maxDepth: 0) != nil)
        #expect(error("1", maxDepth: 0) == nil)
    }

    @Test func decodesValidUTF8() throws {
        #expect(try parse("\"é€𝄞\"") == .string("é€𝄞"))
        #expect(try parse("\"\u{7F}\"") == .string("\u{7F}"))
        #expect(try parse("\"\u{10FFFF}\"") == .string("\u{10FFFF}"))
    }

    @Test(arguments: [
        [0xC0, 0x80],             // overlong NUL
        [0xC1, 0xBF],             // overlong
        [0xE0, 0x80, 0x80],       // overlong 3-byte
        [0xE0, 0x9F, 0xBF],       // overlong 3-byte
        [0xF0, 0x80, 0x80, 0x80], // overlong 4-byte
        [0xF0, 0x8F, 0xBF, 0xBF], // overlong 4-byte
        [0xED, 0xA0, 0x80],       // UTF-8-encoded high surrogate
        [0xED, 0xBF, 0xBF],       // UTF-8-encoded low surrogate
        [0xF4, 0x90, 0x80, 0x80], // above U+10FFFF
        [0xF5, 0x80, 0x80, 0x80], [0xFF], [0xFE],
        [0x80], [0xBF],           // lone continuation bytes
        [0xE2, 0x82],             // truncated
        [0xE2, 0x28, 0xA1],       // bad continuation
        [0xF0, 0x9F, 0x98],       // truncated 4-byte
    ] as [[UInt8]])
    func rejectsInvalidUTF8InStrings(_ sequence: [UInt8]) {
        #expect(error([0x22] + sequence + [0x22]) != nil)
        #expect(error([0x22, 0x5C, 0x6E] + sequence + [0x22]) != nil, "after an escape, on the slow path")
        #expect(error(Array(#"{"a":1,""#.utf8) + sequence + Array(#"":2}"#.utf8)) != nil)
    }

    @Test func rejectsNonASCIIOutsideStrings() {
        #expect(error([0x7B, 0xC3, 0xA9, 0x7D]) != nil)
    }

    @Test func decodesEscapes() throws {
        #expect(try parse(#""\"\\\/\b\f\n\r\t""#) == .string("\"\\/\u{08}\u{0C}\n\r\t"))
        #expect(try parse(#""\u0041\u00e9\u20AC""#) == .string("Aé€"))
        #expect(try parse(#""\u0000""#) == .string("\u{0}"))
        #expect(try parse(#""x\ud834\udd1ey""#) == .string("x𝄞y"))
        #expect(try parse(#""\uDBFF\uDFFF""#) == .string("\u{10FFFF}"))
    }

    @Test(arguments: [#""\ud800""#, #""\udc00""#, #""\ud800\u0041""#, #""\ud800x""#, #""\ud800\ud800""#,
                      #""\udfff\ud800""#, #""a\ud834""#, #""\ud834\""#])
    func rejectsLoneSurrogates(_ text: String) {
        #expect(error(text) != nil)
    }

    @Test(arguments: [#""\x41""#, #""\u12""#, #""\u12G4""#, #""\U0041""#, #""\'""#, #""\"#, "\"a\tb\"", "\"a\nb\"", "\"\u{1F}\""])
    func rejectsBadEscapesAndControlCharacters(_ text: String) {
        #expect(error(text) != nil)
    }

    @Test(arguments: ["0", "-0", "1", "-1", "10", "1.5", "-0.0", "1e10", "1E+2", "1e-2", "-1.5e-3", "12345678901234567890",
                      "1e300", "0.000001"])
    func keepsNumbersAsTheirLiteralText(_ literal: String) throws {
        #expect(try parse(literal) == .number(literal))
        #expect(try parse("[\(literal)]") == .array([.number(literal)]))
    }

    @Test(arguments: ["01", "-01", "00", "+1", ".5", "1.", "1.e5", "1e", "1e+", "-", "--1", "0x10", "1_000", "١"])
    func rejectsMalformedNumbers(_ literal: String) {
        #expect(error(literal) != nil)
        #expect(error("[\(literal)]") != nil)
    }

    @Test func reportsTheOffsetOfTheProblem() {
        #expect(error("[1,2,x]")?.offset == 5)
        #expect(error("{\"a\":1} x")?.offset == 8)
        #expect(error("[1,2,x]")?.description == "unexpected character at byte 5")
    }

    @Test func parsesCollectionsWithoutContiguousStorage() throws {
        let bytes = Array(#"{"a":[1]}"#.utf8).lazy.map { $0 }
        #expect(try StrictJSON.parse(bytes) == .object(["a": .array([.number("1")])]))
    }
}
