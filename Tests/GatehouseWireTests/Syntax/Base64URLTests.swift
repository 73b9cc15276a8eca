import Foundation
import Testing
import GatehouseSyntax

struct Base64URLTests {
    @Test func encodesRFC4648VectorsWithoutPadding() {
        let vectors = ["": "", "f": "Zg", "fo": "Zm8", "foo": "Zm9v", "foob": "Zm9vYg", "fooba": "Zm9vYmE", "foobar": "Zm9vYmFy"]
        for (plain, encoded) in vectors {
            #expect(Base64URL.encode(Array(plain.utf8)) == encoded)
            #expect(Base64URL.decode(Array(encoded.utf8)) == Array(plain.utf8))
        }
    }

    @Test func usesTheURLAlphabet() {
        #expect(Base64URL.encode([0xFB, 0xFF, 0xBF]) == "-_-_")
        #expect(Base64URL.decode(Array("-_-_".utf8)) == [0xFB, 0xFF, 0xBF])
    }

    @Test func roundTripsAndAgreesWithFoundationForEveryLength() {
        var generator = SystemRandomNumberGenerator()
        for length in 0..<200 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let encoded = Base64URL.encode(bytes)
            let reference = Data(bytes).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            #expect(encoded == reference)
            #expect(Base64URL.decode(encoded.utf8) == bytes)
        }
    }

    @Test(arguments: ["Zm9v=", "Zg==", "Zg=", "Zm8=", "Zm+v", "Zm/v", "Zm9 v", " Zm9v", "Zm9v\n", "Zm9v\t", "Zm.v", "Zm9v\0"])
    func rejectsPaddingStandardAlphabetAndWhitespace(_ text: String) {
        #expect(Base64URL.decode(text.utf8) == nil)
    }

    @Test(arguments: ["Z", "Zm9vY", "AAAAA"])
    func rejectsLengthsThatLeaveALoneCharacter(_ text: String) {
        #expect(Base64URL.decode(text.utf8) == nil)
    }

    @Test func rejectsNonZeroTrailingBits() {
        // "Zg" is canonical for "f"; "Zh" decodes to the same byte with a set padding bit.
        #expect(Base64URL.decode(Array("Zg".utf8)) == [0x66])
        for text in ["Zh", "Zi", "Zj", "Zk", "Zv", "Z_"] {
            #expect(Base64URL.decode(Array(text.utf8)) == nil, "\(text)")
        }
        #expect(Base64URL.decode(Array("Zm8".utf8)) == Array("fo".utf8))
        for text in ["Zm9", "Zm-", "Zm_"] {
            #expect(Base64URL.decode(Array(text.utf8)) == nil, "\(text)")
        }
    }

    @Test func everyAcceptedSpellingIsTheCanonicalOne() {
        // Exhaustive over all 2- and 3-character tails: decoding then encoding must give the input back.
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        var accepted = 0
        for a in alphabet {
            for b in alphabet {
                let two = [a, b]
                if let bytes = Base64URL.decode(two) {
                    accepted += 1
                    #expect(Array(Base64URL.encode(bytes).utf8) == two)
                }
                for c in alphabet.prefix(8) {
                    let three = [a, b, c]
                    if let bytes = Base64URL.decode(three) {
                        #expect(Array(Base64URL.encode(bytes).utf8) == three)
                    }
                }
            }
        }
        #expect(accepted == 256)
    }

    @Test func rejectsNonASCIIBytes() {
        #expect(Base64URL.decode([0x5A, 0x6D, 0x39, 0xC3]) == nil)
        #expect(Base64URL.decode([0xFF, 0xFF, 0xFF, 0xFF]) == nil)
    }

    @Test func decodesCollectionsWithoutContiguousStorage() {
        let lazy = Array("Zm9vYmFy".utf8).lazy.map { $0 }
        #expect(Base64URL.decode(lazy) == Array("foobar".utf8))
        #expect(Base64URL.encode(Array("foobar".utf8).lazy.map { $0 }) == "Zm9vYmFy")
    }

    @Test func emptyInputDecodesToNoBytes() {
        #expect(Base64URL.decode([UInt8]()) == [])
    }
}
