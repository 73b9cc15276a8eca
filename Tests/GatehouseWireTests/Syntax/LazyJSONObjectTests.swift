import Testing
@testable import GatehouseSyntax

/// The lazy reader of a token's claims: StrictJSON's verdicts, values made on demand (FuzzClaimsReader compares the two
/// on every input; these are the cases a reader of this kind gets wrong first).
struct LazyJSONObjectTests {
    private func read(_ text: String, maxDepth: Int = 32) throws(StrictJSONError) -> LazyJSONObject? {
        try LazyJSONObject.read(Array(text.utf8), maxDepth: maxDepth)
    }

    private func verdicts(_ text: String, maxDepth: Int = 32) -> (lazy: StrictJSONError?, strict: StrictJSONError?) {
        let bytes = Array(text.utf8)
        var lazy: StrictJSONError?
        var strict: StrictJSONError?
        do { _ = try LazyJSONObject.read(bytes, maxDepth: maxDepth) } catch { lazy = error }
        do { _ = try StrictJSON.parse(bytes, maxDepth: maxDepth) } catch { strict = error }
        return (lazy, strict)
    }

    @Test func everyMemberIsMadeAsStrictJSONMakesIt() throws {
        let text = #"{"iss":"https://issuer.example","n":-1.5e3,"t":true,"f":false,"z":null,"e":"a\u00e9\n","a":["x",1],"o":{"k":{}},"u":"été"}"#
        let object = try #require(try read(text))
        let reference = try #require(try StrictJSON.parse(Array(text.utf8)).objectValue)
        #expect(object.count == reference.count)
        for (name, value) in reference { #expect(object[name] == value, "\(name)") }
        #expect(object.dictionary == reference)
        #expect(object["missing"] == nil)
        #expect(object.names == ["iss", "n", "t", "f", "z", "e", "a", "o", "u"])
    }

    @Test func anEmptyObjectHasNoMembers() throws {
        let object = try #require(try read(" { } "))
        #expect(object.count == 0 && object.dictionary.isEmpty)
    }

    @Test(arguments: ["42", #""text""#, "[1]", "null"])
    func aDocumentThatIsNotAnObjectIsNil(_ text: String) throws {
        #expect(try read(text) == nil)
    }

    /// The same message at the same offset as StrictJSON, including a syntax error after a duplicate (reported first)
    /// and a duplicate spelled with an escape, or in another Unicode normalization (equal as Swift strings).
    @Test(arguments: [
        #"{"a":1,"a":2}"#, #"{"a":1,"\u0061":2}"#, #"{"é":1,"e\u0301":2}"#, #"{"a":1,"a":2,}"#, #"{"a":"x\q"}"#,
        "{\"a\":\"\u{01}\"}", #"{"a":01}"#, #"{"a":tru}"#, #"{"a":"x"#, #"{"a":1} x"#, #"{"a":[[[1]]]}"#, #"{"a":1 "b":2}"#,
        #"{"a":"\ud800"}"#, #"{a:1}"#,
    ])
    func refusesWhatStrictJSONRefusesInItsWords(_ text: String) {
        let (lazy, strict) = verdicts(text, maxDepth: 3)
        #expect(strict != nil, "the case must be one StrictJSON refuses")
        #expect(lazy == strict)
    }

    @Test func invalidUTF8InAPlainStringIsRefusedWhereStrictJSONRefusesIt() {
        let bytes: [UInt8] = Array(#"{"a":""#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8)
        var lazy: StrictJSONError?
        var strict: StrictJSONError?
        do { _ = try LazyJSONObject.read(bytes) } catch { lazy = error }
        do { _ = try StrictJSON.parse(bytes) } catch { strict = error }
        #expect(strict != nil && lazy == strict)
    }

    /// Past sixteen members duplicates are looked for with a set: the first repeated name, as with sixteen or fewer.
    @Test(arguments: [4, 16, 17, 200])
    func findsTheFirstRepeatedNameAtAnySize(_ count: Int) {
        let members = (0..<count).map { #""m\#($0)":\#($0)"# } + [#""m1":0"#, #""m0":0"#]
        let (lazy, strict) = verdicts("{" + members.joined(separator: ",") + "}")
        #expect(strict?.message == #"duplicate member name "m1""#)
        #expect(lazy == strict)
    }
}
