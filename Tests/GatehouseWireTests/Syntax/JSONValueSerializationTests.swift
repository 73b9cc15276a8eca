import Testing
@testable import GatehouseSyntax

struct JSONValueSerializationTests {
    @Test func sortsMembersByUTF8Bytes() {
        let value = JSONValue.object(["b": .number("2"), "a": .number("1"), "B": .null, "é": .bool(true), "aa": .array([])])
        #expect(value.compactJSON == #"{"B":null,"a":1,"aa":[],"b":2,"é":true}"#)
    }

    @Test func escapesStringsDeterministically() {
        let value = JSONValue.string("q\"b\\s/\u{08}\u{0C}\n\r\t\u{0}\u{1F}\u{7F}é😀")
        #expect(value.compactJSON == #""q\"b\\s/\b\f\n\r\t\u0000\u001f"# + "\u{7F}é😀\"")
    }

    @Test func keepsNumberLiterals() {
        #expect(JSONValue.array([.number("1.50"), .number("-0"), .number("1e300")]).compactJSON == "[1.50,-0,1e300]")
    }

    @Test func nestsWithoutWhitespace() {
        let value = JSONValue.object(["o": .object(["k": .array([.string("v"), .null, .bool(false)])])])
        #expect(value.compactJSON == #"{"o":{"k":["v",null,false]}}"#)
    }

    @Test func roundTripsThroughTheStrictParser() throws {
        let source = #"{ "z" : [1, 2.5, "x\u0001\ud83d\ude00"], "a": {"n": null, "t": true}, "s": "\"\\" }"#
        let value = try StrictJSON.parse(Array(source.utf8))
        let compact = value.compactJSON
        #expect(try StrictJSON.parse(Array(compact.utf8)) == value)
        #expect(try StrictJSON.parse(Array(compact.utf8)).compactJSON == compact)
    }
}
