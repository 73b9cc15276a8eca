import Crypto
import _CryptoExtras
import Testing
import GatehouseTokenFixtures
@testable import GatehouseTokens
@testable import GatehouseVocabulary

/// JWK set loading policy; docs/security.md J10, J11, J19.
struct JWKSetTests {
    private typealias F = TokenFixtures

    private func parse(_ keys: [String], allowed: Set<JWSAlgorithm> = TokenFixtures.allAlgorithms) throws -> JWKSet {
        try JWKSet.parse(F.keySet(keys), allowedAlgorithms: allowed)
    }

    private func rsa() throws -> _RSA.Signing.PrivateKey { try #require(F.rsaKey) }

    private func skipReason(_ set: JWKSet, _ kid: String) -> String? {
        set.skipped.first { $0.keyID == kid }?.reason
    }

    // J11
    @Test func badKeysAreSkippedAndGoodKeysStillWork() throws {
        let good = try rsa()
        let weak = try _RSA.Signing.PrivateKey(unsafeKeySize: .init(bitCount: 1024))
        let primitives = try good.publicKey.getKeyPrimitives()
        let ec = P256.Signing.PrivateKey()
        let ed = Curve25519.Signing.PrivateKey()
        let set = try parse([
            try F.rsaJWK(good.publicKey, kid: "rsa"),
            F.ecJWK(raw: Array(ec.publicKey.rawRepresentation), crv: "P-256", kid: "ec"),
            F.okpJWK(raw: Array(ed.publicKey.rawRepresentation), kid: "ed"),
            try F.rsaJWK(weak.publicKey, kid: "rsa-1024"),
            #"{"kty":"RSA","kid":"e1","n":"\#(F.b64(primitives.modulus))","e":"AQ"}"#,
            #"{"kty":"RSA","kid":"e2","n":"\#(F.b64(primitives.modulus))","e":"Ag"}"#,
            try F.rsaJWK(good.publicKey, kid: "enc", extra: #","use":"enc""#),
            #"{"kty":"oct","kid":"hmac","k":"c2VjcmV0"}"#,
            #"{"kty":"foo","kid":"foo"}"#,
            #"{"kid":"no-kty"}"#,
            "42",
            F.ecJWK(raw: Array(P256.Signing.PrivateKey().publicKey.rawRepresentation), crv: "P-256", kid: "dup"),
            F.okpJWK(raw: Array(Curve25519.Signing.PrivateKey().publicKey.rawRepresentation), kid: "dup"),
        ])
        #expect(set.keys.map(\.keyID) == ["rsa", "ec", "ed"])
        #expect(skipReason(set, "rsa-1024") == "RSA modulus is 1024 bits; at least 2048 are required")
        #expect(skipReason(set, "e1") == "RSA public exponent must be odd and at least 3")
        #expect(skipReason(set, "e2") == "RSA public exponent must be odd and at least 3")
        #expect(skipReason(set, "enc") == "use is not \"sig\"")
        #expect(skipReason(set, "hmac") == "symmetric key (kty oct) is never loaded")
        #expect(skipReason(set, "foo") == "unsupported kty \"foo\"")
        #expect(skipReason(set, "no-kty") == "kty is missing or not a string")
        #expect(set.skipped.contains(SkippedKey(keyID: nil, reason: "not a JSON object")))
        #expect(set.skipped.filter { $0.keyID == "dup" }.count == 2)
        #expect(skipReason(set, "dup")?.hasPrefix("duplicate kid") == true)
        #expect(set.skipped.count == 10)

        let input = Array("header.payload".utf8)
        let rsaSignature = try good.signature(for: SHA256.hash(data: input), padding: .insecurePKCS1v1_5)
        let rsaKey = try #require(set.candidates(keyID: "rsa", algorithm: .rs256).first)
        #expect(rsaKey.isValidSignature(Array(rsaSignature.rawRepresentation), for: input, algorithm: .rs256))
        let ecKey = try #require(set.candidates(keyID: "ec", algorithm: .es256).first)
        #expect(ecKey.isValidSignature(Array(try ec.signature(for: input).rawRepresentation), for: input, algorithm: .es256))
        let edKey = try #require(set.candidates(keyID: "ed", algorithm: .edDSA).first)
        #expect(edKey.isValidSignature(Array(try ed.signature(for: input)), for: input, algorithm: .edDSA))
    }

    @Test func duplicateKidSkipsEveryKeySharingIt() throws {
        let jwk = try F.rsaJWK(try rsa().publicKey, kid: "same")
        let set = try parse([jwk, jwk, F.ecJWK(raw: Array(P256.Signing.PrivateKey().publicKey.rawRepresentation), crv: "P-256", kid: "other")])
        #expect(set.keys.map(\.keyID) == ["other"])
        #expect(set.candidates(keyID: "same", algorithm: .rs256).isEmpty)
        #expect(set.skipped == Array(repeating: SkippedKey(keyID: "same", reason: "duplicate kid: 2 keys share it, so none is used"), count: 2))
    }

    @Test func keysSkippedForOtherReasonsDoNotMakeAKidAmbiguous() throws {
        let key = try rsa().publicKey
        let set = try parse([try F.rsaJWK(key, kid: "k"), try F.rsaJWK(key, kid: "k", extra: #","use":"enc""#)])
        #expect(set.keys.map(\.keyID) == ["k"])
        #expect(set.skipped == [SkippedKey(keyID: "k", reason: "use is not \"sig\"")])
    }

    @Test(arguments: ["d", "p", "q", "dp", "dq", "qi", "oth"])
    func privateKeysAreNeverLoaded(_ member: String) throws {
        let set = try parse([try F.rsaJWK(try rsa().publicKey, kid: "priv", extra: #","\#(member)":"AQAB""#)])
        #expect(set.keys.isEmpty)
        #expect(skipReason(set, "priv")?.contains("private") == true)
    }

    @Test func privateECAndOKPKeysAreNeverLoaded() throws {
        let ec = P256.Signing.PrivateKey()
        let ed = Curve25519.Signing.PrivateKey()
        let set = try parse([
            F.ecJWK(raw: Array(ec.publicKey.rawRepresentation), crv: "P-256", kid: "ec", extra: #","d":"\#(F.b64(ec.rawRepresentation))""#),
            F.okpJWK(raw: Array(ed.publicKey.rawRepresentation), kid: "ed", extra: #","d":"\#(F.b64(ed.rawRepresentation))""#),
        ])
        #expect(set.keys.isEmpty)
        #expect(set.skipped.count == 2)
    }

    @Test func algPresentMeansExactlyThatAlgorithm() throws {
        let set = try parse([try F.rsaJWK(try rsa().publicKey, kid: "k", extra: #","alg":"PS384""#)])
        #expect(set.keys.first?.algorithms == [.ps384])
    }

    @Test func algAbsentMeansAllowedAlgorithmsTheKeyTypeCanDo() throws {
        let allowed: Set<JWSAlgorithm> = [.rs256, .ps512, .es256, .es384, .edDSA]
        let set = try parse([
            try F.rsaJWK(try rsa().publicKey, kid: "rsa"),
            F.ecJWK(raw: Array(P256.Signing.PrivateKey().publicKey.rawRepresentation), crv: "P-256", kid: "p256"),
            F.ecJWK(raw: Array(P384.Signing.PrivateKey().publicKey.rawRepresentation), crv: "P-384", kid: "p384"),
            F.ecJWK(raw: Array(P521.Signing.PrivateKey().publicKey.rawRepresentation), crv: "P-521", kid: "p521"),
            F.okpJWK(raw: Array(Curve25519.Signing.PrivateKey().publicKey.rawRepresentation), kid: "ed"),
        ], allowed: allowed)
        let algorithms = Dictionary(uniqueKeysWithValues: set.keys.map { ($0.keyID ?? "", $0.algorithms) })
        #expect(algorithms == ["rsa": [.rs256, .ps512], "p256": [.es256], "p384": [.es384], "ed": [.edDSA]])
        #expect(skipReason(set, "p521") == "no allowed algorithm fits this key (EC P-521)")
        let all = try parse([try F.rsaJWK(try rsa().publicKey, kid: "rsa")])
        #expect(all.keys.first?.algorithms == [.rs256, .rs384, .rs512, .ps256, .ps384, .ps512])
    }

    @Test func algNotAllowedForTheProviderIsSkipped() throws {
        let set = try parse([try F.rsaJWK(try rsa().publicKey, kid: "k", extra: #","alg":"RS512""#)], allowed: [.rs256])
        #expect(set.keys.isEmpty)
        #expect(skipReason(set, "k") == "alg RS512 is not allowed for this provider")
    }

    @Test(arguments: ["HS256", "RSA1_5", "RSA-OAEP", "ES521", "ES224", "none", "rs256", "RS256 "])
    func algThatIsNotASupportedSignatureAlgorithmIsSkipped(_ alg: String) throws {
        let set = try parse([try F.rsaJWK(try rsa().publicKey, kid: "k", extra: #","alg":"\#(alg)""#)])
        #expect(set.keys.isEmpty)
        #expect(skipReason(set, "k")?.contains("is not a supported JWS signature algorithm") == true)
    }

    @Test func algIncompatibleWithTheKeyTypeIsSkipped() throws {
        let p384 = Array(P384.Signing.PrivateKey().publicKey.rawRepresentation)
        let set = try parse([
            F.ecJWK(raw: p384, crv: "P-384", kid: "es256-on-p384", extra: #","alg":"ES256""#),
            F.ecJWK(raw: p384, crv: "P-384", kid: "rs256-on-ec", extra: #","alg":"RS256""#),
            try F.rsaJWK(try rsa().publicKey, kid: "es256-on-rsa", extra: #","alg":"ES256""#),
            try F.rsaJWK(try rsa().publicKey, kid: "eddsa-on-rsa", extra: #","alg":"EdDSA""#),
            F.okpJWK(raw: Array(Curve25519.Signing.PrivateKey().publicKey.rawRepresentation), kid: "es256-on-ed", extra: #","alg":"ES256""#),
        ])
        #expect(set.keys.isEmpty)
        #expect(skipReason(set, "es256-on-p384") == "alg ES256 does not fit this key (EC P-384)")
        #expect(set.skipped.count == 5)
    }

    @Test func keyOpsMustAllowVerify() throws {
        let jwk = try F.rsaJWK(try rsa().publicKey, kid: "k")
        func loaded(_ extra: String) throws -> Bool {
            let keyJWK = String(jwk.dropLast()) + extra + "}"
            return try !parse([keyJWK]).keys.isEmpty
        }
        #expect(try loaded(#","key_ops":["verify"]"#))
        #expect(try loaded(#","key_ops":["sign","verify"]"#))
        #expect(try loaded(#","use":"sig""#))
        #expect(try !loaded(#","key_ops":["sign"]"#))
        #expect(try !loaded(#","key_ops":["encrypt"]"#))
        #expect(try !loaded(#","key_ops":[]"#))
        #expect(try !loaded(#","key_ops":"verify""#))
        #expect(try !loaded(#","key_ops":["verify",1]"#))
        #expect(try !loaded(#","use":"enc""#))
        #expect(try !loaded(#","use":"SIG""#))
        #expect(try !loaded(#","use":null"#))
    }

    @Test func malformedKeyMaterialIsSkipped() throws {
        let ecRaw = Array(P256.Signing.PrivateKey().publicKey.rawRepresentation)
        var offCurve = ecRaw
        offCurve[63] ^= 0x01
        let primitives = try rsa().publicKey.getKeyPrimitives()
        let n = F.b64(primitives.modulus)
        let set = try parse([
            #"{"kty":"RSA","kid":"padded","n":"\#(n)=","e":"AQAB"}"#,
            #"{"kty":"RSA","kid":"std-alphabet","n":"+\#(n.dropFirst())","e":"AQAB"}"#,
            #"{"kty":"RSA","kid":"no-e","n":"\#(n)"}"#,
            #"{"kty":"RSA","kid":"n-number","n":5,"e":"AQAB"}"#,
            F.ecJWK(raw: offCurve, crv: "P-256", kid: "off-curve"),
            F.ecJWK(raw: Array(ecRaw.dropLast()), crv: "P-256", kid: "short"),
            F.ecJWK(raw: ecRaw, crv: "P-384", kid: "wrong-crv"),
            F.ecJWK(raw: ecRaw, crv: "secp256k1", kid: "k1"),
            #"{"kty":"EC","kid":"no-crv","x":"\#(F.b64(ecRaw[..<32]))","y":"\#(F.b64(ecRaw[32...]))"}"#,
            #"{"kty":"OKP","kid":"x25519","crv":"X25519","x":"\#(F.b64(ecRaw[..<32]))"}"#,
            #"{"kty":"OKP","kid":"ed448","crv":"Ed448","x":"\#(F.b64(Array(repeating: 1, count: 57)))"}"#,
            #"{"kty":"OKP","kid":"ed-short","crv":"Ed25519","x":"\#(F.b64(ecRaw[..<31]))"}"#,
            #"{"kty":"RSA","kid":7}"#,
            #"{"kty":"RSA","kid":""}"#,
        ])
        #expect(set.keys.isEmpty)
        #expect(set.skipped.count == 14)
        #expect(skipReason(set, "padded") == "n is not canonical base64url")
        #expect(skipReason(set, "off-curve") == "point is not on P-256")
        #expect(skipReason(set, "short") == "x is 31 bytes; 32 expected")
        #expect(skipReason(set, "wrong-crv") == "x is 32 bytes; 48 expected")
        #expect(skipReason(set, "x25519") == "unsupported OKP crv \"X25519\"")
    }

    @Test func rsaModulusWithALeadingZeroByteIsAccepted() throws {
        let primitives = try rsa().publicKey.getKeyPrimitives()
        let jwk = #"{"kty":"RSA","kid":"z","n":"\#(F.b64([0] + Array(primitives.modulus)))","e":"AQAB"}"#
        #expect(try parse([jwk]).keys.count == 1)
    }

    @Test func generatedKeysDoNotLookLikeROCAKeys() throws {
        let keys = [try rsa(), try #require(F.otherRSAKey)]
        let moduli = try keys.map { Array(try $0.publicKey.getKeyPrimitives().modulus) }
        for modulus in moduli {
            #expect(!modulus.isEmpty)
            #expect(!ROCAFingerprint.matches(modulus: modulus))
        }
    }

    @Test func documentsThatAreNotKeySetsThrow() {
        for document in ["", "[]", "{}", #"{"keys":{}}"#, #"{"keys":null}"#, #"{"keys":[],"keys":[]}"#, "{\"keys\":[]} x", #"{"Keys":[]}"#] {
            #expect(throws: JWKSetError.self, "\(document)") {
                try JWKSet.parse(Array(document.utf8), allowedAlgorithms: F.allAlgorithms)
            }
        }
        #expect(throws: Never.self) { try JWKSet.parse(Array(#"{"keys":[]}"#.utf8), allowedAlgorithms: F.allAlgorithms) }
    }

    @Test func errorsDescribeTheProblem() {
        let error = #expect(throws: JWKSetError.self) { try JWKSet.parse(Array("[]".utf8), allowedAlgorithms: F.allAlgorithms) }
        #expect(error?.description == "invalid JWK set: the document is not a JSON object")
    }

    // J10: no fallback key.
    @Test func candidatesMatchTheExactKidAndAlgorithm() throws {
        let set = try parse([
            try F.rsaJWK(try rsa().publicKey, kid: "r1", extra: #","alg":"RS256""#),
            F.ecJWK(raw: Array(P256.Signing.PrivateKey().publicKey.rawRepresentation), crv: "P-256", kid: "e1"),
        ])
        #expect(set.candidates(keyID: "r1", algorithm: .rs256).map(\.keyID) == ["r1"])
        #expect(set.candidates(keyID: "r1", algorithm: .ps256).isEmpty)
        #expect(set.candidates(keyID: "R1", algorithm: .rs256).isEmpty)
        #expect(set.candidates(keyID: "r1 ", algorithm: .rs256).isEmpty)
        #expect(set.candidates(keyID: "unknown", algorithm: .rs256).isEmpty)
        #expect(set.candidates(keyID: "e1", algorithm: .rs256).isEmpty)
        #expect(set.candidates(keyID: nil, algorithm: .es256).map(\.keyID) == ["e1"])
        #expect(set.candidates(keyID: nil, algorithm: .rs256).map(\.keyID) == ["r1"])
        #expect(set.candidates(keyID: nil, algorithm: .edDSA).isEmpty)
    }

    @Test func candidatesWithoutKidRequireExactlyOneMatchingKey() throws {
        let set = try parse([
            try F.rsaJWK(try rsa().publicKey, kid: "r1"),
            try F.rsaJWK(try #require(F.otherRSAKey).publicKey, kid: "r2"),
        ])
        #expect(set.candidates(keyID: nil, algorithm: .rs256).isEmpty)
        #expect(set.candidates(keyID: "r2", algorithm: .rs256).map(\.keyID) == ["r2"])
    }

    @Test func keysWithoutKidAreFoundOnlyByTokensWithoutKid() throws {
        let set = try parse([try F.rsaJWK(try rsa().publicKey, kid: nil)])
        #expect(set.candidates(keyID: nil, algorithm: .rs256).count == 1)
        #expect(set.candidates(keyID: "any", algorithm: .rs256).isEmpty)
    }

    // J19
    @Test func headerAlgDifferentFromTheKeysAlgNeverVerifies() throws {
        let key = try rsa()
        let input = Array("h.p".utf8)
        let pss = Array(try key.signature(for: SHA256.hash(data: input), padding: .PSS).rawRepresentation)
        let pkcs1 = Array(try key.signature(for: SHA256.hash(data: input), padding: .insecurePKCS1v1_5).rawRepresentation)
        let pinned = try #require(try parse([try F.rsaJWK(key.publicKey, kid: "k", extra: #","alg":"RS256""#)]).keys.first)
        #expect(!pinned.isValidSignature(pss, for: input, algorithm: .ps256))
        #expect(pinned.isValidSignature(pkcs1, for: input, algorithm: .rs256))

        // An alg-less key attacked first with another algorithm still verifies genuine tokens afterwards.
        let open = try #require(try parse([try F.rsaJWK(key.publicKey, kid: "k")], allowed: [.rs256]).keys.first)
        #expect(!open.isValidSignature(pss, for: input, algorithm: .ps256))
        #expect(!open.isValidSignature(Array(repeating: 0, count: 256), for: input, algorithm: .rs256))
        #expect(open.isValidSignature(pkcs1, for: input, algorithm: .rs256))
    }
}
