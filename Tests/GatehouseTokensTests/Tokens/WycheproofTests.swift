import Foundation
import Testing
import GatehouseTokenFixtures
import GatehouseVocabulary
import GatehouseSyntax
import GatehouseTokens

/// Wycheproof vectors (C2SP/wycheproof, carried in Resources/wycheproof with their licence): signature primitives
/// (J13-J18) and the JWS and JWK policy files, run through the same code a request goes through.
struct WycheproofTests {
    private typealias F = TokenFixtures

    /// The vector file's top-level object. The files are resources of this test target, so a missing one is a
    /// failure of the build or of this test, never a skip.
    private func load(_ name: String) throws -> [String: JSONValue] {
        let url = try #require(
            Bundle.module.url(forResource: name, withExtension: nil, subdirectory: "wycheproof"),
            "Wycheproof vector file \(name) is not among the test target's resources")
        let data = try Data(contentsOf: url)
        // The vectors are parsed with StrictJSON itself: 250 KB files with every JSON feature are a test too.
        let document = try StrictJSON.parse(Array(data), maxDepth: 16)
        let object: [String: JSONValue] = try #require(document.objectValue)
        return object
    }

    private func groups(_ file: [String: JSONValue]) -> [[String: JSONValue]] {
        (file["testGroups"]?.arrayValue ?? []).compactMap(\.objectValue)
    }

    private func tests(_ group: [String: JSONValue]) -> [[String: JSONValue]] {
        (group["tests"]?.arrayValue ?? []).compactMap(\.objectValue)
    }

    private func hex(_ value: JSONValue?) throws -> [UInt8] {
        let text = Array(try #require(value?.stringValue).utf8)
        try #require(text.count % 2 == 0)
        func nibble(_ c: UInt8) throws -> UInt8 {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
            default: throw CocoaError(.coderInvalidValue)
            }
        }
        return try stride(from: 0, to: text.count, by: 2).map { try nibble(text[$0]) << 4 | nibble(text[$0 + 1]) }
    }

    /// A JWK for a signature-vector group: its `publicKeyJwk` / `keyJwk`, else one built from the EC fields.
    private func groupJWK(_ group: [String: JSONValue]) throws -> String {
        if let jwk = group["publicKeyJwk"] ?? group["keyJwk"] { return jwk.compactJSON }
        let key = try #require(group["publicKey"]?.objectValue)
        func coordinate(_ name: String) throws -> [UInt8] {
            let bytes = try hex(key[name]).drop { $0 == 0 }
            return [UInt8](repeating: 0, count: max(0, 32 - bytes.count)) + bytes
        }
        return F.ecJWK(raw: try coordinate("wx") + coordinate("wy"), crv: "P-256", kid: nil)
    }

    // J13-J18: every vector of each primitive through VerificationKey.isValidSignature.
    @Test(arguments: [
        ("rsa_signature_2048_sha256_test.json", JWSAlgorithm.rs256),
        ("rsa_pss_2048_sha256_mgf1_32_test.json", .ps256),
        ("ecdsa_secp256r1_sha256_p1363_test.json", .es256),
        ("ed25519_test.json", .edDSA),
    ])
    func signatureVectors(_ name: String, _ algorithm: JWSAlgorithm) throws {
        let file = try load(name)
        var counts: [String: Int] = [:]
        for group in groups(file) {
            let set = try JWKSet.parse(F.keySet([try groupJWK(group)]), allowedAlgorithms: [algorithm])
            let key = try #require(set.keys.first, "group key skipped: \(set.skipped)")
            for test in tests(group) {
                let tcId = test["tcId"]?.integerValue ?? -1
                let verified = key.isValidSignature(try hex(test["sig"]), for: try hex(test["msg"]), algorithm: algorithm)
                let result = test["result"]?.stringValue ?? "?"
                counts[result, default: 0] += 1
                switch result {
                case "valid": #expect(verified, "\(name) tcId \(tcId) must verify")
                case "invalid": #expect(!verified, "\(name) tcId \(tcId) must not verify")
                case "acceptable": break
                default: Issue.record("\(name) tcId \(tcId): unknown result \(result)")
                }
            }
        }
        #expect(counts["valid", default: 0] > 0)
        #expect(counts["invalid", default: 0] > 0)
    }

    /// The outcome of one token against one key set, through the request path: parse, candidates, verify.
    private struct Outcome {
        var strict: AuthFailure?
        var opaque: Result<CompactJWS, AuthFailure>
        var accepted: Bool
    }

    private func evaluate(_ token: String, keys: JWKSet?) -> Outcome {
        var strictFailure: AuthFailure?
        do { _ = try CompactJWS.parse(Substring(token), maxBytes: 1 << 20) } catch { strictFailure = error }
        let opaque: Result<CompactJWS, AuthFailure>
        do {
            opaque = .success(try CompactJWS.parse(Substring(token), maxBytes: 1 << 20, payload: .opaque))
        } catch {
            opaque = .failure(error)
        }
        var accepted = false
        if case .success(let jws) = opaque, let keys {
            accepted = keys.candidates(keyID: jws.keyID, algorithm: jws.algorithm).contains {
                $0.isValidSignature(jws.signature, for: jws.signingInput, algorithm: jws.algorithm)
            }
        }
        return Outcome(strict: strictFailure, opaque: opaque, accepted: accepted)
    }

    private func keySet(_ document: JSONValue?) throws -> JWKSet? {
        guard let document else { return nil }
        let set = document.objectValue?["keys"] != nil ? document : .object(["keys": .array([document])])
        return try JWKSet.parse(Array(set.compactJSON.utf8), allowedAlgorithms: F.allAlgorithms)
    }

    private func failureReason(_ outcome: Outcome) -> FailureReason? {
        if case .failure(let failure) = outcome.opaque { return failure.reason }
        return nil
    }

    /// json_web_signature_test.json: whole compact tokens against each group's public JWK.
    ///
    /// Most payloads are not JSON objects (`foo`, empty, binary), which a JWT must have, so the strict
    /// JWT parse rejects them; each vector is also run with `PayloadRule.opaque` (plain RFC 7515) to reach
    /// the signature check. Beyond "valid accepted, invalid rejected":
    /// - groups with only a symmetric key (HS256): Gatehouse never holds HMAC keys, so their valid tokens are
    ///   rejected, and must be rejected for their algorithm (which shows their base64url and JSON parsed);
    /// - tcId 372, 373 carry a '?' inside a segment (RFC 7515 §2 forbids it): 372 in the header, which is
    ///   malformed; 373 in the payload of an HS256 token, whose header is judged first: `unsupported_algorithm`;
    /// - tcId 367, 370 may go either way (in this vector version they equal the valid 357);
    /// - `pinnedByKeyAlg`: the group's JWK says `"alg":"PS256"` while the RFC 7520 token is PS384; a key's
    ///   `alg` pins it, so rejection is required, and the same key without `alg` must verify the token;
    /// - `unregisteredKeyAlg`: the JWK says `"alg":"ES521"` (not a JWA name): the key is skipped, and the same
    ///   key without `alg` must verify the token.
    @Test func jsonWebSignatureVectors() throws {
        let file = try load("json_web_signature_test.json")
        let eitherWay: Set<Int64> = [367, 370]
        let malformed: Set<Int64> = [372]
        let hmacWithMalformedPayload: Set<Int64> = [373]
        let pinnedByKeyAlg: Set<Int64> = [346, 350]
        let unregisteredKeyAlg: Set<Int64> = [347, 351]
        var counts: [String: Int] = [:]
        for group in groups(file) {
            let keys = try keySet(group["public"])
            for test in tests(group) {
                let tcId = try #require(test["tcId"]?.integerValue)
                let jws = try #require(test["jws"])
                let token = jws.stringValue ?? jws.compactJSON
                let result = test["result"]?.stringValue ?? "?"
                let outcome = evaluate(token, keys: keys)
                let accepted = outcome.accepted
                counts[result, default: 0] += 1
                let label = "tcId \(tcId) (\(test["comment"]?.stringValue ?? ""))"
                if outcome.strict == nil {
                    #expect(failureReason(outcome) == nil, "\(label): the JWT parse accepted what the JWS parse refused")
                }
                if eitherWay.contains(tcId) { continue }
                if malformed.contains(tcId) {
                    #expect(failureReason(outcome) == .malformedToken, "\(label)")
                    continue
                }
                if hmacWithMalformedPayload.contains(tcId) {
                    #expect(failureReason(outcome) == .unsupportedAlgorithm, "\(label)")
                    continue
                }
                if result == "invalid" {
                    #expect(!accepted, "\(label) must be rejected")
                    continue
                }
                #expect(result == "valid", "\(label): unexpected result \(result)")
                if keys == nil {
                    #expect(!accepted && failureReason(outcome) == .unsupportedAlgorithm, "\(label): HMAC must be refused for its alg")
                } else if pinnedByKeyAlg.contains(tcId) || unregisteredKeyAlg.contains(tcId) {
                    #expect(!accepted, "\(label): key alg does not allow this token")
                    if unregisteredKeyAlg.contains(tcId) {
                        #expect(keys?.skipped.first?.reason.contains("ES521") == true, "\(label)")
                    }
                    var publicKey = try #require(group["public"]?.objectValue)
                    publicKey["alg"] = nil
                    let unpinned = evaluate(token, keys: try keySet(.object(publicKey))).accepted
                    #expect(unpinned, "\(label): verifies once the key is not pinned")
                } else {
                    #expect(accepted, "\(label) must be accepted")
                }
            }
        }
        #expect(counts["valid", default: 0] > 0)
        #expect(counts["invalid", default: 0] > 0)
    }

    /// json_web_key_test.json: key-set policy. Each group holds a key set (`public` when given, else
    /// `private`) and tokens. What each group asserts, by its `comment` (and tcIds):
    /// - jws_mixedSymmetryKeyset (1): an HMAC key next to an EC key: the `oct` key is skipped, the EC key
    ///   loads, and the HS256 token is refused for its algorithm.
    /// - jws_keyset (2, 3), HS256/HS384/HS512 (10-18), invalid_aes_gcm_key / invalid_aes_kw_key (25, 26):
    ///   symmetric keys only: every key is skipped as `oct`, every token (the "valid" HMAC ones too) refused.
    /// - jws_duplicate_kid (4): two keys with one kid (HMAC ones here, so skipped as `oct` already): refused.
    /// - rs256 (5): a plain RS256 key loads and its token verifies.
    /// - rs256 (6): the same key with `use:"enc"`, `alg:"RSA1_5"`: skipped, token refused.
    /// - jws_rsa_roca_key (7): a ROCA-vulnerable modulus (CVE-2017-15361): skipped.
    /// - keysize_too_small (8): 1024-bit RSA: skipped. exponentOne (9): e = 1: skipped.
    /// - wrong_algorithm / invalid_algorithm (19, 20): EC key with `alg` ES521 / ES224, not JWA names: skipped.
    /// - invalid_use (21): `use:"enc"`: skipped. invalid_point (22): point not on P-256: skipped.
    /// - wrong_curve (23): P-256 coordinates labelled P-384: skipped. wrong_kty (24): EC members under
    ///   `kty:"RSA"`: skipped.
    /// Each refused asymmetric token must be refused by key policy (its key skipped for the reason listed,
    /// no candidate key), not merely by a failed signature.
    @Test func jsonWebKeyVectors() throws {
        let file = try load("json_web_key_test.json")
        let skipReasonByTcId: [Int64: String] = [
            6: "use is not \"sig\"", 7: "ROCA", 8: "1024 bits", 9: "public exponent", 19: "alg \"ES521\"", 20: "alg \"ES224\"",
            21: "use is not \"sig\"", 22: "point is not on P-256", 23: "48 expected", 24: "n is missing",
        ]
        var counts: [String: Int] = [:]
        for group in groups(file) {
            let comment = group["comment"]?.stringValue ?? ""
            let keys = try #require(try keySet(group["public"] ?? group["private"]), "\(comment)")
            for test in tests(group) {
                let tcId = try #require(test["tcId"]?.integerValue)
                let token = try #require(test["jws"]?.stringValue)
                let result = test["result"]?.stringValue ?? "?"
                counts[result, default: 0] += 1
                let outcome = evaluate(token, keys: keys)
                let accepted = outcome.accepted
                let label = "tcId \(tcId) (\(comment))"
                guard case .success(let jws) = outcome.opaque else {
                    // HMAC tokens: refused for their algorithm, and no HMAC key was ever loaded.
                    #expect(failureReason(outcome) == .unsupportedAlgorithm, "\(label)")
                    #expect(!accepted)
                    let symmetric = keys.skipped.filter { $0.reason == "symmetric key (kty oct) is never loaded" }
                    #expect(!symmetric.isEmpty && symmetric.count == keys.skipped.count, "\(label): \(keys.skipped)")
                    continue
                }
                if let reason = skipReasonByTcId[tcId] {
                    #expect(result == "invalid", "\(label)")
                    #expect(!accepted, "\(label) must be rejected")
                    #expect(keys.candidates(keyID: jws.keyID, algorithm: jws.algorithm).isEmpty, "\(label)")
                    let skipped = keys.skipped.first { $0.keyID == jws.keyID }
                    #expect(skipped?.reason.contains(reason) == true, "\(label): skipped \(keys.skipped)")
                } else {
                    #expect(result == "valid", "\(label): an invalid vector without a policy expectation")
                    #expect(accepted, "\(label) must be accepted")
                }
            }
        }
        #expect(counts["valid", default: 0] > 0)
        #expect(counts["invalid", default: 0] > 0)
    }

    @Test func rocaVectorKeyIsSkippedForItsFingerprint() throws {
        let file = try load("json_web_key_test.json")
        let group = try #require(groups(file).first { $0["comment"]?.stringValue == "jws_rsa_roca_key" })
        let keys = try #require(try keySet(group["public"]))
        #expect(keys.keys.isEmpty)
        #expect(keys.skipped.first?.reason.contains("ROCA") == true)
    }
}
