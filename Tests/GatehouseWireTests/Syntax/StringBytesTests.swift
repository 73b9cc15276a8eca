import Testing
import GatehouseSyntax

/// The in-place scans of a string's UTF-8 the header paths use.
struct StringBytesTests {
    @Test func textOfBytesIsTakenWhenUTF8AndRefusedOtherwise() {
        #expect(StringBytes.string(validatingUTF8: Array("Bearer abc".utf8)[...]) == "Bearer abc")
        #expect(StringBytes.string(validatingUTF8: Array("café".utf8)[...]) == "café")
        #expect(StringBytes.string(validatingUTF8: [0x61, 0xE9, 0x62][...]) == nil, "Latin-1 é is not UTF-8")
        #expect(StringBytes.string(validatingUTF8: [0xF0, 0x9F, 0x98][...]) == nil, "a truncated sequence")
        #expect(StringBytes.string(validatingUTF8: [][...]) == "")
    }

    @Test func containsAndASCII() {
        #expect(StringBytes.contains(UInt8(ascii: ","), in: "Bearer a,Bearer b"))
        #expect(!StringBytes.contains(UInt8(ascii: ","), in: "Bearer a"))
        #expect(!StringBytes.contains(UInt8(ascii: ","), in: ""))
        #expect(StringBytes.isASCII("x-auth-subject") && !StringBytes.isASCII("x-ünicode"))
    }

    @Test func fieldNamesAreLowerCasedByASCIIRules() {
        #expect(HTTP2FieldName.lowercased("X-Auth-Subject") == "x-auth-subject")
        #expect(HTTP2FieldName.lowercased("already-lower") == "already-lower")
        #expect(HTTP2FieldName.lowercased("X-Ü") == "x-ü")
    }
}
