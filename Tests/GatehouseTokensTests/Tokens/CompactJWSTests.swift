import Testing
import GatehouseTokenFixtures
import GatehouseVocabulary
import GatehouseTokens
import GatehouseSyntax

/// docs/security.md rows about parsing: J01, J02, J03, J20, J23-J31, J39, J40.
struct CompactJWSTests {
    private typealias F = TokenFixtures
    private let es256Header = #"{"alg":"ES256","kid":"k1","typ":"JWT"}"#

    @Test func parsesAWellFormedToken() throws {
        let signature = (0..<64).map { UInt8($0) }
        let token = F.token(header: es256Header, payload: #"{"iss":"https://issuer.example","sub":"u1","exp":1}"#, signature: signature)
        let jws = try F.parse(token)
        #expect(jws.algorithm == .es256)
        #expect(jws.keyID == "k1")
        #expect(jws.header["typ"] == .string("JWT"))
        #expect(jws.claims["sub"] == .string("u1"))
        #expect(jws.claims["exp"] == .number("1"))
        #expect(jws.signature == signature)
        let segments = token.split(separator: ".")
        #expect(Array(jws.signingInput) == Array("\(segments[0]).\(segments[1])".utf8))
        #expect(Array(jws.encodedPayload) == Array(segments[1].utf8))
    }

    @Test func parsesATokenThatIsASliceOfALargerString() throws {
        let token = F.token(header: es256Header)
        let header = "Bearer " + token
        let jws = try CompactJWS.parse(header.dropFirst(7), maxBytes: 8192)
        #expect(Array(jws.encodedPayload) == Array(token.split(separator: ".")[1].utf8))
    }

    // J01: the algorithm is judged right after the strict header, before the payload and signature segments,
    // so the classic `alg: none` token (empty signature) is reported as the attack it is.
    @Test(arguments: ["none", "None", "NONE", "nOnE"])
    func algNoneIsUnsupportedWhateverTheSignatureSegmentHolds(_ alg: String) {
        let header = #"{"alg":"\#(alg)","kid":"k1"}"#
        let headerAndPayload = "\(F.segment(header)).\(F.segment(#"{"iss":"https://issuer.example","sub":"u"}"#))"
        let variants = [
            "empty signature": headerAndPayload + ".",
            "no signature segment": headerAndPayload,
            "garbage signature": headerAndPayload + ".!!not-base64!!",
            "padded signature": headerAndPayload + ".AAAA==",
            "some signature": F.token(header: header),
            "empty payload": "\(F.segment(header))..",
            "payload not JSON": "\(F.segment(header)).\(F.segment("hello")).",
        ]
        for (name, token) in variants {
            let failure = F.failure(token)
            #expect(failure?.reason == .unsupportedAlgorithm, "\(name)")
            #expect(failure?.algorithm == alg, "\(name)")
            #expect(failure?.keyID == "k1", "\(name)")
        }
        #expect(F.failure(headerAndPayload + ".")?.issuer == "https://issuer.example")
    }

    // J03: HMAC is refused as an algorithm whatever the signature segment holds.
    @Test(arguments: ["HS256", "HS384", "HS512"])
    func hmacIsUnsupportedWhateverTheSignatureSegmentHolds(_ alg: String) {
        let headerAndPayload = "\(F.segment(#"{"alg":"\#(alg)"}"#)).\(F.segment(#"{"sub":"u"}"#))"
        for token in [headerAndPayload + ".", headerAndPayload, headerAndPayload + ".%%%", headerAndPayload + ".AAAA"] {
            #expect(F.failure(token)?.reason == .unsupportedAlgorithm, "\(token)")
        }
    }

    // J01/J30: a header that is not strict JSON stays malformed, even when it spells none.
    @Test func malformedHeaderStaysMalformedEvenWithAlgNone() {
        let payload = F.segment(#"{"sub":"u"}"#)
        for header in [#"{"alg":"none","alg":"none"}"#, #"{"alg":"none""#, #"["none"]"#, #"{'alg':'none'}"#] {
            #expect(F.failure("\(F.segment(header)).\(payload).")?.reason == .malformedToken, "\(header)")
        }
        #expect(F.failure("\(F.segment(#"{"alg":"none"}"#))=.\(payload).")?.reason == .malformedToken)
    }

    // J02: a supported algorithm without its signature is signature stripping.
    @Test func emptyOrMissingSignatureIsABadSignature() {
        let headerAndPayload = "\(F.segment(es256Header)).\(F.segment(#"{"sub":"u"}"#))"
        #expect(F.failure(headerAndPayload + ".")?.reason == .badSignature)
        #expect(F.failure(headerAndPayload + ".")?.detail == "empty signature segment")
        #expect(F.failure(headerAndPayload)?.reason == .badSignature)
        #expect(F.failure(headerAndPayload)?.detail == "signature segment missing")
        #expect(F.failure(headerAndPayload)?.keyID == "k1")
    }

    // J28: two segments that are no JWS header at all (an opaque token) are malformed, not a stripped signature.
    @Test func twoSegmentsWithoutAJWSHeaderAreMalformed() {
        for token in ["ya29.a0AfH6SMBx", "abc.def", ".def", "abc."] {
            #expect(F.failure(token)?.reason == .malformedToken, "\(token)")
            #expect(F.failure(token)?.detail == "expected 3 segments, found 2", "\(token)")
        }
    }

    // J20
    @Test(arguments: [
        #""rs256""#, #""RS256 ""#, #"" RS256""#, #""Rs256""#, #""XS256""#, #""ES256K""#, #""ES521""#, #""EDDSA""#, #""Ed25519""#,
        #""HS256""#, #""HS384""#, #""HS512""#, #""""#, "256", "null", "true", #"["RS256"]"#, #"{"alg":"RS256"}"#,
    ])
    func unsupportedOrNonStringAlgIsRejected(_ alg: String) {
        let failure = F.failure(F.token(header: #"{"alg":\#(alg),"kid":"k1"}"#))
        #expect(failure?.reason == .unsupportedAlgorithm)
        #expect(failure?.keyID == "k1")
    }

    @Test func missingAlgIsRejected() {
        let failure = F.failure(F.token(header: #"{"kid":"k1"}"#))
        #expect(failure?.reason == .unsupportedAlgorithm)
        #expect(failure?.detail == "alg missing")
    }

    @Test func everySupportedAlgorithmIsAcceptedWhenSpelledExactly() throws {
        for algorithm in JWSAlgorithm.allCases {
            let length = algorithm.signatureByteCount ?? 256
            let jws = try F.parse(F.token(header: #"{"alg":"\#(algorithm.rawValue)"}"#, signature: Array(repeating: 1, count: length)))
            #expect(jws.algorithm == algorithm)
            #expect(jws.keyID == nil)
        }
    }

    // J23
    @Test(arguments: [#"["exp"]"#, "[]", #""b64""#, "null"])
    func critIsRejected(_ crit: String) {
        let failure = F.failure(F.token(header: #"{"alg":"ES256","crit":\#(crit)}"#))
        #expect(failure?.reason == .malformedToken)
        #expect(failure?.algorithm == "ES256")
    }

    // J24
    @Test(arguments: ["false", "true"])
    func b64IsRejected(_ b64: String) {
        #expect(F.failure(F.token(header: #"{"alg":"ES256","b64":\#(b64),"crit":["b64"]}"#))?.reason == .malformedToken)
        #expect(F.failure(F.token(header: #"{"alg":"ES256","b64":\#(b64)}"#))?.reason == .malformedToken)
    }

    // J25
    @Test func jweIsRejectedBeforeAnyCrypto() {
        let jwe = [#"{"alg":"RSA-OAEP","enc":"A256GCM"}"#, "key", "iv", "ciphertext", "tag"].map(F.segment).joined(separator: ".")
        let failure = F.failure(jwe)
        #expect(failure?.reason == .malformedToken)
        #expect(failure?.detail == "JWE is not accepted")
    }

    // J26
    @Test(arguments: [
        #"{"payload":"eyJzdWIiOiJ1In0","signatures":[{"protected":"eyJhbGciOiJFUzI1NiJ9","signature":"AAAA"}]}"#,
        #"{"payload":"eyJzdWIiOiJ1In0","protected":"eyJhbGciOiJFUzI1NiJ9","signature":"AAAA"}"#,
        "{", "{}", "{.a.b",
    ])
    func jwsJSONSerializationIsRejected(_ text: String) {
        let failure = F.failure(text)
        #expect(failure?.reason == .malformedToken)
    }

    // J27
    @Test(arguments: ["JWT", "jwt", "Jwt", "application/jwt", "APPLICATION/JWT"])
    func nestedJWTIsRejected(_ cty: String) {
        #expect(F.failure(F.token(header: #"{"alg":"ES256","cty":"\#(cty)"}"#))?.reason == .malformedToken)
    }

    @Test func otherContentTypesAndTypesAreAccepted() throws {
        _ = try F.parse(F.token(header: #"{"alg":"ES256","cty":"json","typ":"at+jwt"}"#))
        #expect(F.failure(F.token(header: #"{"alg":"ES256","cty":1}"#))?.reason == .malformedToken)
        #expect(F.failure(F.token(header: #"{"alg":"ES256","typ":1}"#))?.reason == .malformedToken)
        #expect(F.failure(F.token(header: #"{"alg":"ES256","typ":null}"#))?.reason == .malformedToken)
    }

    // J05: header keys and URLs are carried along but never used; parsing does not reject them either.
    @Test func embeddedKeyHeadersAreIgnored() throws {
        let header = #"{"alg":"ES256","jwk":{"kty":"EC"},"jku":"https://evil.example/jwks","x5u":"https://evil.example/x","x5c":["MII"]}"#
        let jws = try F.parse(F.token(header: header))
        #expect(jws.algorithm == .es256)
        #expect(jws.keyID == nil)
    }

    @Test(arguments: ["1", "null", #"["k"]"#, "{}"])
    func nonStringKidIsRejected(_ kid: String) {
        let failure = F.failure(F.token(header: #"{"alg":"ES256","kid":\#(kid)}"#))
        #expect(failure?.reason == .malformedToken)
        #expect(failure?.keyID == nil)
    }

    @Test func emptyKidIsRejected() {
        #expect(F.failure(F.token(header: #"{"alg":"ES256","kid":""}"#))?.reason == .malformedToken)
    }

    // J08: a kid is carried verbatim, whatever it contains.
    @Test func kidIsKeptVerbatim() throws {
        let kid = #"../../etc/passwd' OR 1=1; $(rm -rf /)\u000a"#
        let jws = try F.parse(F.token(header: #"{"alg":"ES256","kid":"\#(kid)"}"#))
        #expect(jws.keyID == "../../etc/passwd' OR 1=1; $(rm -rf /)\n")
    }

    // J28
    @Test(arguments: ["", ".", "..", "...", "a", "a.b", "a.b.c.d", "a..c", ".b.c", "a.b.", "a.b.c.d.e.f", "....."])
    func wrongSegmentCountsAndEmptySegmentsAreRejected(_ token: String) {
        #expect(F.failure(token)?.reason == .malformedToken)
    }

    @Test func emptySegmentsOfAnOtherwiseValidTokenAreRejected() {
        let parts = F.token(header: es256Header).split(separator: ".").map(String.init)
        #expect(F.failure(".\(parts[1]).\(parts[2])")?.detail == "empty header segment")
        #expect(F.failure("\(parts[0])..\(parts[2])")?.detail == "empty payload segment")
    }

    // J29
    @Test func nonCanonicalBase64URLIsRejectedInEverySegment() {
        let parts = F.token(header: #"{"alg":"ES256","kid":"k"}"#, payload: #"{"sub":"u123"}"#).split(separator: ".").map(String.init)
        // Header and payload lengths here leave a partial final group, so padding and trailing bits apply.
        #expect(parts[0].count % 4 != 0 && parts[1].count % 4 != 0)
        for index in 0..<3 {
            var variants = [parts[index] + "=", parts[index] + "==", " " + parts[index], parts[index] + " ", parts[index] + "\n"]
            variants.append(String(parts[index].dropLast()) + "+")
            variants.append(String(parts[index].dropLast()) + "/")
            var characters = Array(parts[index])
            characters[1] = "+"
            variants.append(String(characters))
            for variant in variants {
                var modified = parts
                modified[index] = variant
                #expect(F.failure(modified.joined(separator: "."))?.reason == .malformedToken, "segment \(index): \(variant)")
            }
        }
    }

    @Test func nonZeroTrailingBitsAreRejected() {
        let parts = F.token(header: #"{"alg":"ES256","kid":"k"}"#, payload: #"{"sub":"u123"}"#).split(separator: ".").map(String.init)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        for index in 0..<2 {
            let last = parts[index].last ?? "A"
            let position = alphabet.firstIndex(of: last) ?? 0
            var modified = parts
            modified[index] = String(parts[index].dropLast()) + String(alphabet[position + 1])
            #expect(F.failure(modified.joined(separator: "."))?.detail.contains("base64url") == true)
        }
    }

    // J30
    @Test func headerOrPayloadThatIsNotUTF8IsRejected() {
        let latin1 = F.b64([0x7B, 0x22, 0x61, 0x6C, 0x67, 0x22, 0x3A, 0x22, 0xE9, 0x22, 0x7D])  // {"alg":"<E9>"}
        #expect(F.failure("\(latin1).\(F.segment("{}")).AAAA")?.reason == .malformedToken)
        let payload = F.b64([0x7B, 0x22, 0x73, 0x22, 0x3A, 0x22, 0xC0, 0x80, 0x22, 0x7D])      // {"s":"<C0 80>"}
        #expect(F.failure("\(F.segment(es256Header)).\(payload).AAAA")?.reason == .malformedToken)
    }

    @Test(arguments: ["[]", #""ES256""#, "null", "1", "", "foo", #"{"alg":"ES256"} x"#])
    func headerOrPayloadThatIsNotAJSONObjectIsRejected(_ json: String) {
        let signature = F.b64(Array(repeating: 1, count: 64))
        let json64 = json.isEmpty ? "" : F.segment(json)
        #expect(F.failure("\(json64).\(F.segment(#"{"sub":"u"}"#)).\(signature)")?.reason == .malformedToken)
        #expect(F.failure("\(F.segment(es256Header)).\(json64).\(signature)")?.reason == .malformedToken)
    }

    // J31
    @Test(arguments: [
        #"{"alg":"ES256","alg":"ES256"}"#, #"{"alg":"ES256","alg":"none"}"#, #"{"alg":"ES256","\u0061lg":"none"}"#,
        #"{"alg":"ES256","kid":"a","kid":"b"}"#,
    ])
    func duplicateHeaderMembersAreRejected(_ header: String) {
        #expect(F.failure(F.token(header: header))?.reason == .malformedToken)
    }

    @Test func duplicateClaimsAreRejected() {
        let failure = F.failure(F.token(header: es256Header, payload: #"{"iss":"https://issuer.example","sub":"a","sub":"b"}"#))
        #expect(failure?.reason == .malformedToken)
        #expect(failure?.detail.contains("duplicate member name \"sub\"") == true)
        #expect(failure?.algorithm == "ES256")
        #expect(failure?.keyID == "k1")
    }

    // J39
    @Test func oversizedTokensAreRejectedBeforeParsing() {
        let big = String(repeating: "A", count: 80 * 1024)
        let failure = F.failure(big)
        #expect(failure?.reason == .malformedToken)
        #expect(failure?.detail == "token is 81920 bytes, more than the limit of 8192")
        // A valid token one byte over the limit is still refused.
        let token = F.token(header: es256Header)
        #expect(F.failure(token, maxBytes: token.utf8.count) == nil)
        #expect(F.failure(token, maxBytes: token.utf8.count - 1)?.reason == .malformedToken)
    }

    @Test func aHundredMegabyteTokenIsRejectedInConstantTime() {
        let huge = String(repeating: ".", count: 100_000_000)
        let clock = ContinuousClock()
        var failure: AuthFailure?
        let elapsed = clock.measure { failure = F.failure(huge) }
        #expect(failure?.reason == .malformedToken)
        #expect(elapsed < .milliseconds(100))
    }

    @Test func fortyThousandDotsStopAtTheFifth() {
        let dots = String(repeating: ".", count: 40_000)
        let failure = F.failure(dots, maxBytes: 100_000)
        #expect(failure?.reason == .malformedToken)
        #expect(failure?.detail == "expected 3 segments, found more than 5")
        #expect(F.failure("a.b.c.d.e.f" + dots, maxBytes: 100_000)?.detail == "expected 3 segments, found more than 5")
    }

    // J40
    @Test func deeplyNestedJSONIsRejectedWithoutStackOverflow() {
        let deep = #"{"a":"# + String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000) + "}"
        let inPayload = F.token(header: es256Header, payload: deep)
        #expect(F.failure(inPayload, maxBytes: 100_000)?.reason == .malformedToken)
        let inHeader = F.token(header: #"{"alg":"ES256","x":"# + String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000) + "}")
        #expect(F.failure(inHeader, maxBytes: 100_000)?.reason == .malformedToken)
    }

    @Test(arguments: [(JWSAlgorithm.es256, 64), (.es384, 96), (.es512, 132), (.edDSA, 64)])
    func signatureLengthIsCheckedPerAlgorithm(_ algorithm: JWSAlgorithm, _ length: Int) throws {
        let header = #"{"alg":"\#(algorithm.rawValue)"}"#
        _ = try F.parse(F.token(header: header, signature: Array(repeating: 1, count: length)))
        for wrong in [1, length - 1, length + 1, 2 * length, 72] {
            let failure = F.failure(F.token(header: header, signature: Array(repeating: 1, count: wrong)))
            #expect(failure?.reason == .badSignature, "\(algorithm.rawValue) with \(wrong) bytes")
        }
    }

    @Test func derEncodedES256SignatureIsRejected() {
        // A typical DER ECDSA signature: 30 45 02 20 <r> 02 21 00 <s>, 71 bytes.
        let der: [UInt8] = [0x30, 0x45, 0x02, 0x20] + Array(repeating: 1, count: 32) + [0x02, 0x21, 0x00] + Array(repeating: 2, count: 32)
        #expect(F.failure(F.token(header: es256Header, signature: der))?.reason == .badSignature)
    }

    @Test func diagnosticsCarryAlgKidAndIssuer() {
        let failure = F.failure(F.token(header: #"{"alg":"HS256","kid":"key-7"}"#, payload: #"{"iss":"https://a.example"}"#))
        #expect(failure?.algorithm == "HS256")
        #expect(failure?.keyID == "key-7")
        #expect(failure?.issuer == "https://a.example")
        #expect(failure?.subject == nil)
    }

    @Test func diagnosticsAreCutTo256BytesOnACharacterBoundary() {
        let long = String(repeating: "é", count: 200)  // 400 bytes
        let failure = F.failure(F.token(header: #"{"alg":"\#(long)","kid":"\#(long)"}"#, payload: #"{"iss":"x\#(long)"}"#))
        #expect(failure?.algorithm == String(repeating: "é", count: 128))
        #expect(failure?.keyID == String(repeating: "é", count: 128))
        #expect(failure?.issuer == "x" + String(repeating: "é", count: 127))
        #expect(failure?.issuer?.utf8.count == 255)
    }

    @Test func nonStringIssuerIsNotADiagnostic() {
        let failure = F.failure(F.token(header: #"{"alg":"none"}"#, payload: #"{"iss":42}"#))
        #expect(failure?.reason == .unsupportedAlgorithm)
        #expect(failure?.issuer == nil)
    }

    @Test func opaquePayloadsAreOnlyForGenericJWS() throws {
        let token = "\(F.segment(es256Header))..\(F.b64(Array(repeating: 1, count: 64)))"
        #expect(F.failure(token)?.reason == .malformedToken)
        let jws = try CompactJWS.parse(Substring(token), maxBytes: 8192, payload: .opaque)
        #expect(jws.claims.isEmpty)
        #expect(jws.encodedPayload.isEmpty)
    }
}
