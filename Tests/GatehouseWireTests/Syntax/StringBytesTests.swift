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
        let token = String(repeating: "eyJhbGciOiJSUzI1NiJ9.", count: 50)  // past a word at either end
        #expect(!StringBytes.contains(UInt8(ascii: " "), in: token) && StringBytes.contains(UInt8(ascii: " "), in: token + " "))
        #expect(StringBytes.contains(UInt8(ascii: " "), in: " " + token))
        #expect(StringBytes.isASCII("x-auth-subject") && !StringBytes.isASCII("x-ünicode"))
    }

    @Test func fieldNamesAreLowerCasedByASCIIRules() {
        #expect(HTTP2FieldName.lowercased("X-Auth-Subject") == "x-auth-subject")
        #expect(HTTP2FieldName.lowercased("already-lower") == "already-lower")
        #expect(HTTP2FieldName.lowercased("X-Ü") == "x-ü")
    }

    /// Field names are compared without case by ASCII rules only, over the strings' own storage: small strings (held
    /// inline), large ones, and strings that are not ASCII, against a byte-by-byte reading of the rule.
    @Test func namesAreComparedIgnoringASCIICaseOnly() {
        func byRule(_ lhs: String, _ rhs: String) -> Bool {
            let (left, right) = (Array(lhs.utf8), Array(rhs.utf8))
            guard left.count == right.count else { return false }
            return zip(left, right).allSatisfy { a, b in
                a == b || (a | 0x20 == b | 0x20 && (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(a | 0x20))
            }
        }
        let long = String(repeating: "X-Forwarded-", count: 8)
        let pairs: [(String, String)] = [
            ("Content-Length", "content-length"), ("content-length", "content-lengtH"), ("Host", "host"), ("Host", "hosts"),
            ("x-auth-@", "x-auth-`"), ("[", "{"), ("X-Ü", "x-ü"), ("X-Ü", "x-Ü"), ("", ""), ("a", ""),
            (long + "For", long.lowercased() + "for"), (long + "For", long + "Fox"), ("traceparent", "TRACEPARENT"),
        ]
        for (lhs, rhs) in pairs {
            #expect(lhs.utf8.elementsEqualIgnoringASCIICase(rhs.utf8) == byRule(lhs, rhs), "\(lhs) vs \(rhs)")
            #expect(rhs.utf8.elementsEqualIgnoringASCIICase(lhs.utf8) == byRule(rhs, lhs), "\(rhs) vs \(lhs)")
        }
    }
}
