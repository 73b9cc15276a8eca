import Testing
@testable import GatehouseSyntax


struct HeaderValueEncodingTests {
    /// Reverses the encoding the way an upstream would.
    private func percentDecoded(_ value: String) -> String? {
        var bytes: [UInt8] = []
        var index = value.utf8.startIndex
        while index != value.utf8.endIndex {
            let byte = value.utf8[index]
            if byte == UInt8(ascii: "%") {
                let hexStart = value.utf8.index(after: index)
                guard let hexEnd = value.utf8.index(hexStart, offsetBy: 2, limitedBy: value.utf8.endIndex),
                    let decoded = UInt8(String(value[hexStart..<hexEnd]), radix: 16)
                else { return nil }
                bytes.append(decoded)
                index = hexEnd
            } else {
                bytes.append(byte)
                index = value.utf8.index(after: index)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private func isSafeHeaderValue(_ value: String) -> Bool {
        value.utf8.allSatisfy { $0 >= 0x20 && $0 <= 0x7E }
    }

    @Test(arguments: ["alice", "Alice Smith", "a@example.com", "https://x.test/p.png?a=b&c=d", "!\"#$&'()*+,-./:;<=>?@[\\]^_`{|}~", ""])
    func visibleASCIIStringIsSentAsIs(value: String) {
        #expect(HeaderValueEncoding.encode(string: value) == value)
        #expect(HeaderValueEncoding.encode(.string(value)) == value)
    }

    @Test func percentSignIsAlwaysEncodedSoThatDecodingIsSafe() {
        #expect(HeaderValueEncoding.encode(string: "100%") == "100%25")
        #expect(HeaderValueEncoding.encode(string: "%41") == "%2541")
    }

    // docs/security.md P13
    @Test(arguments: [
        ("a\r\nX-Auth-Subject: admin", "a%0D%0AX-Auth-Subject: admin"),
        ("a\u{0}b", "a%00b"),
        ("tab\there", "tab%09here"),
        ("del\u{7f}", "del%7F"),
        ("\u{1b}[31mred", "%1B[31mred"),
        ("evil\u{202e}gnp.exe", "evil%E2%80%AEgnp.exe"),
        ("caf\u{e9}", "caf%C3%A9"),
        ("\u{1F600}", "%F0%9F%98%80"),
        ("Zo\u{eb} 100%", "Zo%C3%AB 100%25"),
    ])
    func unsafeBytesArePercentEncodedDeterministically(value: String, expected: String) {
        let encoded = HeaderValueEncoding.encode(string: value)
        #expect(encoded == expected)
        #expect(isSafeHeaderValue(encoded))
        #expect(percentDecoded(encoded) == value)
    }

    @Test func spacesAtTheEdgesAreEncodedSoHTTPTrimmingCannotChangeTheValue() {
        #expect(HeaderValueEncoding.encode(string: " alice ") == "%20alice%20")
        #expect(HeaderValueEncoding.encode(string: "  ") == "%20%20")
        #expect(HeaderValueEncoding.encode(string: "a b") == "a b")
    }

    @Test func nullSendsNoHeader() {
        #expect(HeaderValueEncoding.encode(.null) == nil)
    }

    @Test func numbersAndBooleansAreTheirJSONText() {
        #expect(HeaderValueEncoding.encode(.number("1700000000")) == "1700000000")
        #expect(HeaderValueEncoding.encode(.number("-1.5e3")) == "-1.5e3")
        #expect(HeaderValueEncoding.encode(.bool(true)) == "true")
        #expect(HeaderValueEncoding.encode(.bool(false)) == "false")
    }

    @Test func arrayOfScalarsIsCommaJoinedWithCommasInsideElementsEncoded() {
        let groups = JSONValue.array([.string("admins"), .string("a,b"), .string("caf\u{e9}"), .number("7"), .bool(true)])
        #expect(HeaderValueEncoding.encode(groups) == "admins,a%2Cb,caf%C3%A9,7,true")
        #expect(HeaderValueEncoding.encode(.array([.string(" x"), .string("y ")])) == "%20x,y%20")
        #expect(HeaderValueEncoding.encode(.array([])) == "")
    }

    @Test func commaOutsideAnArrayIsLeftAsIs() {
        #expect(HeaderValueEncoding.encode(.string("Smith, Alice")) == "Smith, Alice")
    }

    @Test func objectsAndNestedArraysAreEncodedCompactJSON() throws {
        let address = JSONValue.object(["locality": .string("Z\u{fc}rich\r\n"), "country": .string("CH")])
        let encoded = try #require(HeaderValueEncoding.encode(address))
        #expect(isSafeHeaderValue(encoded))
        #expect(percentDecoded(encoded) == address.compactJSON)
        #expect(encoded == HeaderValueEncoding.encode(string: address.compactJSON))

        let nested = JSONValue.array([.string("a"), .array([.string("b")])])
        #expect(HeaderValueEncoding.encode(nested) == HeaderValueEncoding.encode(string: nested.compactJSON))
        let withNull = JSONValue.array([.string("a"), .null])
        #expect(HeaderValueEncoding.encode(withNull) == HeaderValueEncoding.encode(string: withNull.compactJSON))
    }

    @Test func everyByteValueEncodesToASafeReversibleValue() throws {
        var all = ""
        for scalar in (0...0x2FF).compactMap(Unicode.Scalar.init) {
            all.unicodeScalars.append(scalar)
        }
        let encoded = HeaderValueEncoding.encode(string: all)
        #expect(isSafeHeaderValue(encoded))
        #expect(!encoded.utf8.contains(0x0D) && !encoded.utf8.contains(0x0A) && !encoded.utf8.contains(0x00))
        #expect(percentDecoded(encoded) == all)
    }

    /// `isVerbatim` (a claim's signed text written as it is, issue 57) holds exactly when the encoding leaves the text
    /// unchanged: every short string over an alphabet of the bytes that matter, and every scalar up to U+02FF alone.
    @Test func verbatimIsExactlyWhatTheEncodingLeavesAsItIs() {
        let alphabet: [Unicode.Scalar] = ["a", " ", "%", ",", "~", "\t", "\u{7F}", "\u{1}", "é", "\u{202E}", "\""]
        var strings = [""]
        for length in 1...4 {
            var counters = [Int](repeating: 0, count: length)
            while true {
                var string = ""
                for counter in counters { string.unicodeScalars.append(alphabet[counter]) }
                strings.append(string)
                var position = 0
                while position < length, counters[position] == alphabet.count - 1 { counters[position] = 0; position += 1 }
                if position == length { break }
                counters[position] += 1
            }
        }
        strings += (0...0x2FF).compactMap(Unicode.Scalar.init).map { String(Character($0)) }
        for string in strings {
            var copy = string
            let verbatim = copy.withUTF8 { HeaderValueEncoding.isVerbatim($0) }
            #expect(verbatim == (HeaderValueEncoding.encode(string: string) == string), "\(string.debugDescription)")
        }
    }
}
