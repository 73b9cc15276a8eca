import Crypto
import Foundation
@testable import Gatehouse
import NIOHTTP1
import Testing
import _CryptoExtras
import GatehouseSyntax
import GatehouseConfig
import GatehouseTokens
import GatehouseAuth
import GatehouseProxy
import GatehouseVocabulary

/// docs/security.md, the J rows (token cases), end to end through the real listener: every attack token is answered 401 with its
/// docs/reference.md §4 reason and an RFC 6750 challenge, reaches nothing upstream, writes exactly one
/// failure-log line, and the sidecar keeps serving. Each token is otherwise valid (`Claims.valid`),
/// so it fails only for the attacked property.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct TokenAttackTests {
    /// The RSA test key published a second time, for PS256 only.
    static let pssSigner = TestSigner.rsaPSS.with(keyID: "rsa-pss")
    static let signers: [TestSigner] = [.rsa, pssSigner, .ec, .ed]

    struct Attack: Sendable, CustomTestStringConvertible {
        let row: String
        let name: String
        /// The accepted reasons; more than one only where docs/reference.md §4 allows either reading.
        let reasons: Set<FailureReason>
        let makeToken: @Sendable () -> String

        init(_ row: String, _ name: String, _ reasons: Set<FailureReason>, _ makeToken: @escaping @Sendable () -> String) {
            self.row = row
            self.name = name
            self.reasons = reasons
            self.makeToken = makeToken
        }

        var testDescription: String { "\(row) \(name)" }
    }

    // MARK: - The table (rows whose token stands alone)

    static let attacks: [Attack] = algorithmAttacks + structureAttacks + encodingAttacks + claimAttacks

    static let algorithmAttacks: [Attack] = {
        var attacks: [Attack] = []
        // J01/J03: the header names the attack; the payload and signature segments cannot turn it into a parsing accident.
        for none in ["none", "None", "NONE", "nOnE"] {
            let unsigned = Forge.encode(Forge.header(["alg": .string(none)])) + "." + Forge.encode(Forge.claims())
            attacks += [
                Attack("J01", "alg \(none), empty signature", [.unsupportedAlgorithm]) { unsigned + "." },
                Attack("J01", "alg \(none), no signature segment", [.unsupportedAlgorithm]) { unsigned },
                Attack("J01", "alg \(none), signature segment not base64url", [.unsupportedAlgorithm]) { unsigned + ".*" },
                Attack("J01", "alg \(none) carrying a genuine RS256 signature", [.unsupportedAlgorithm]) {
                    Forge.signed(header: Forge.header(["alg": .string(none)]))
                },
            ]
        }
        for hmac in ["HS256", "HS384", "HS512"] {
            let unsigned = Forge.encode(Forge.header(["alg": .string(hmac)])) + "." + Forge.encode(Forge.claims())
            attacks += [
                Attack("J03", "alg \(hmac), empty signature", [.unsupportedAlgorithm]) { unsigned + "." },
                Attack("J03", "alg \(hmac), no signature segment", [.unsupportedAlgorithm]) { unsigned },
                Attack("J03", "alg \(hmac), signature segment not base64url", [.unsupportedAlgorithm]) { unsigned + ".a+b/c=" },
            ]
        }
        attacks += [
            Attack("J02", "empty signature segment", [.badSignature]) { Forge.withSegment(Forge.valid(), 2, "") },
            Attack("J02", "signature segment missing", [.badSignature]) {
                let parts = Forge.valid().split(separator: ".", omittingEmptySubsequences: false)
                return String(parts[0]) + "." + String(parts[1])
            },
            Attack("J02", "RS256 signature of one zero byte", [.badSignature]) { Forge.withSignature(Forge.valid(), [0]) },
            Attack("J10", "unknown kid", [.unknownKey]) { TestSigner.rsa.with(keyID: "no-such-key").token(claims: Claims.valid()) },
        ]
        let badAlgorithms: [(String, JSONValue?)] = [
            ("rs256", .string("rs256")), ("\"RS256 \"", .string("RS256 ")), ("\" RS256\"", .string(" RS256")),
            ("Rs256", .string("Rs256")), ("ES256K", .string("ES256K")), ("unknown XYZ", .string("XYZ")), ("empty string", .string("")),
            ("missing", nil), ("a number", .number("256")), ("null", .null), ("an array", .array([.string("RS256")])),
            ("an object", .object(["name": .string("RS256")])),
        ]
        for (name, value) in badAlgorithms {
            attacks.append(Attack("J20", "alg \(name)", [.unsupportedAlgorithm]) {
                var members: [String: JSONValue] = ["kid": .string("rsa-1"), "typ": .string("JWT")]
                members["alg"] = value
                return Forge.signed(header: Forge.json(members))
            })
        }
        return attacks
    }()

    static let structureAttacks: [Attack] = [
        Attack("J23", "crit naming exp", [.malformedToken]) { Forge.signed(header: Forge.header(["crit": .array([.string("exp")])])) },
        Attack("J23", "crit empty", [.malformedToken]) { Forge.signed(header: Forge.header(["crit": .array([])])) },
        Attack("J23", "crit b64 with b64", [.malformedToken]) {
            Forge.signed(header: Forge.header(["crit": .array([.string("b64")]), "b64": .bool(true)]))
        },
        Attack("J24", "b64 false", [.malformedToken]) { Forge.signed(header: Forge.header(["b64": .bool(false)])) },
        Attack("J24", "b64 true", [.malformedToken]) { Forge.signed(header: Forge.header(["b64": .bool(true)])) },
        Attack("J25", "JWE, 5 segments", [.malformedToken]) {
            Forge.encode("{\"alg\":\"RSA-OAEP\",\"enc\":\"A256GCM\"}") + ".AAAA.AAAAAAAAAAAAAAAA."
                + Forge.encode(Forge.claims()) + ".AAAAAAAAAAAAAAAAAAAAAA"
        },
        Attack("J25", "5 segments of a valid token plus two", [.malformedToken]) { Forge.valid() + ".AAAA.AAAA" },
        Attack("J26", "JWS JSON general serialization", [.malformedToken]) {
            let parts = Forge.valid().split(separator: ".").map(String.init)
            return Forge.json([
                "payload": .string(parts[1]),
                "signatures": .array([.object(["protected": .string(parts[0]), "signature": .string(parts[2])])]),
            ])
        },
        Attack("J26", "JWS JSON flattened serialization", [.malformedToken]) {
            let parts = Forge.valid().split(separator: ".").map(String.init)
            return Forge.json(["payload": .string(parts[1]), "protected": .string(parts[0]), "signature": .string(parts[2])])
        },
        Attack("J27", "cty JWT", [.malformedToken]) { Forge.signed(header: Forge.header(["cty": .string("JWT")])) },
        Attack("J27", "cty jwt", [.malformedToken]) { Forge.signed(header: Forge.header(["cty": .string("jwt")])) },
        Attack("J27", "cty application/jwt", [.malformedToken]) { Forge.signed(header: Forge.header(["cty": .string("application/jwt")])) },
        Attack("J27", "nested JWT as the payload", [.malformedToken]) {
            Forge.signed(header: Forge.header(["cty": .string("JWT")]), payload: Forge.valid())
        },
        Attack("J28", "empty token", [.malformedToken]) { "" },
        Attack("J28", "2 segments, no JWS header", [.malformedToken]) { "ya29.a0AfH6SMBx3" },
        Attack("J28", "4 segments", [.malformedToken]) { Forge.valid() + ".AAAA" },
        Attack("J28", "two dots only", [.malformedToken]) { ".." },
        Attack("J28", "empty header segment", [.malformedToken]) { Forge.withSegment(Forge.valid(), 0, "") },
        Attack("J28", "empty payload segment", [.malformedToken]) { Forge.withSegment(Forge.valid(), 1, "") },
    ]

    static let encodingAttacks: [Attack] = [
        Attack("J29", "= padding on the header", [.malformedToken]) {
            Forge.signed(header: Forge.header(), segmentEncoding: { Forge.encode($0) + "=" })
        },
        Attack("J29", "= padding on the signature", [.malformedToken]) { Forge.valid() + "=" },
        Attack("J29", "standard base64 + and / in the signature", [.malformedToken]) {
            let token = Forge.valid { $0.contains("-") || $0.contains("_") }
            let parts = token.split(separator: ".").map(String.init)
            let standard = parts[2].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            return Forge.withSegment(token, 2, standard)
        },
        Attack("J29", "space inside the token", [.malformedToken]) {
            let token = Forge.valid()
            return String(token.prefix(20)) + " " + String(token.dropFirst(20))
        },
        Attack("J29", "tab inside the token", [.malformedToken]) {
            let token = Forge.valid()
            return String(token.prefix(20)) + "\t" + String(token.dropFirst(20))
        },
        Attack("J29", "non-zero trailing bits in the signature", [.malformedToken]) {
            // 256 signature bytes leave 4 unused bits in the last character: set one, same bytes decoded.
            let token = Forge.valid()
            let parts = token.split(separator: ".").map(String.init)
            let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
            let last = alphabet.firstIndex(of: parts[2].last!)!  // test fixture: never empty
            return Forge.withSegment(token, 2, String(parts[2].dropLast()) + String(alphabet[last | 1]))
        },
        Attack("J30", "header not UTF-8", [.malformedToken]) {
            Forge.signed(headerBytes: Array("{\"alg\":\"RS256\",\"kid\":\"rsa-1\",\"x\":\"".utf8) + [0xC3, 0x28] + Array("\"}".utf8),
                         payloadBytes: Array(Forge.claims().utf8))
        },
        Attack("J30", "payload not UTF-8", [.malformedToken]) {
            let claims = Forge.claims()
            return Forge.signed(headerBytes: Array(Forge.header().utf8),
                         payloadBytes: Array(claims.dropLast().utf8) + Array(",\"name\":\"".utf8) + [0xFF, 0xFE] + Array("\"}".utf8))
        },
        Attack("J30", "payload with a byte-order mark", [.malformedToken]) {
            Forge.signed(headerBytes: Array(Forge.header().utf8), payloadBytes: [0xEF, 0xBB, 0xBF] + Array(Forge.claims().utf8))
        },
        Attack("J30", "payload a JSON array", [.malformedToken]) { Forge.signed(header: Forge.header(), payload: "[" + Forge.claims() + "]") },
        Attack("J30", "payload a JSON string", [.malformedToken]) { Forge.signed(header: Forge.header(), payload: "\"user-1\"") },
        Attack("J30", "payload null", [.malformedToken]) { Forge.signed(header: Forge.header(), payload: "null") },
        Attack("J30", "payload not JSON", [.malformedToken]) { Forge.signed(header: Forge.header(), payload: "hello") },
        Attack("J30", "payload with trailing bytes", [.malformedToken]) { Forge.signed(header: Forge.header(), payload: Forge.claims() + "x") },
        Attack("J30", "header a JSON array", [.malformedToken]) { Forge.signed(header: "[\"RS256\"]") },
        Attack("J31", "alg twice in the header", [.malformedToken]) {
            Forge.signed(header: "{\"alg\":\"RS256\",\"kid\":\"rsa-1\",\"alg\":\"none\"}")
        },
        Attack("J31", "kid twice in the header", [.malformedToken]) {
            Forge.signed(header: "{\"alg\":\"RS256\",\"kid\":\"rsa-1\",\"kid\":\"other\"}")
        },
        Attack("J31", "sub twice in the payload", [.malformedToken]) {
            Forge.signed(header: Forge.header(), payload: String(Forge.claims().dropLast()) + ",\"sub\":\"admin\"}")
        },
        Attack("J31", "iss twice in the payload", [.malformedToken]) {
            Forge.signed(header: Forge.header(), payload: String(Forge.claims().dropLast()) + ",\"iss\":\"https://evil.test\"}")
        },
        Attack("J31", "exp twice in the payload", [.malformedToken]) {
            Forge.signed(header: Forge.header(), payload: String(Forge.claims().dropLast()) + ",\"exp\":99999999999}")
        },
    ]

    static let claimAttacks: [Attack] = {
        var attacks: [Attack] = []
        func claim(
            _ row: String, _ name: String, _ reasons: Set<FailureReason>,
            _ change: @escaping @Sendable (inout [String: JSONValue], Int64) -> Void
        ) {
            attacks.append(Attack(row, name, reasons) {
                let now = Int64(Date().timeIntervalSince1970)
                var claims = Claims.valid()
                change(&claims, now)
                return TestSigner.rsa.token(claims: claims)
            })
        }
        claim("J32", "exp a string", [.invalidClaims]) { claims, now in claims["exp"] = .string(String(now + 600)) }
        claim("J32", "exp a fraction", [.invalidClaims]) { claims, now in claims["exp"] = .number("\(now + 600).5") }
        claim("J32", "exp negative", [.invalidClaims]) { claims, _ in claims["exp"] = .number("-1") }
        claim("J32", "exp 1e300", [.invalidClaims]) { claims, _ in claims["exp"] = .number("1e300") }
        claim("J32", "exp beyond Int64", [.invalidClaims]) { claims, _ in claims["exp"] = .number("99999999999999999999") }
        claim("J32", "exp true", [.invalidClaims]) { claims, _ in claims["exp"] = .bool(true) }
        claim("J32", "nbf a string", [.invalidClaims]) { claims, now in claims["nbf"] = .string(String(now - 10)) }
        claim("J32", "iat a string", [.invalidClaims]) { claims, now in claims["iat"] = .string(String(now - 10)) }
        claim("J32", "iss a number", [.unknownIssuer]) { claims, _ in claims["iss"] = .number("1") }
        claim("J32", "iss an array", [.unknownIssuer]) { claims, _ in claims["iss"] = .array([.string(Claims.issuer)]) }
        claim("J32", "sub a number", [.invalidClaims]) { claims, _ in claims["sub"] = .number("12345") }
        claim("J32", "sub an object", [.invalidClaims]) { claims, _ in claims["sub"] = .object(["id": .string("user-1")]) }
        claim("J32", "sub null", [.invalidClaims]) { claims, _ in claims["sub"] = .null }
        claim("J33", "expired an hour ago", [.expired]) { claims, now in claims["exp"] = .number(String(now - 3600)) }
        claim("J33", "expired beyond the 60 s leeway", [.expired]) { claims, now in claims["exp"] = .number(String(now - 120)) }
        claim("J34", "nbf an hour ahead", [.notYetValid]) { claims, now in claims["nbf"] = .number(String(now + 3600)) }
        claim("J34", "nbf beyond the 60 s leeway", [.notYetValid]) { claims, now in claims["nbf"] = .number(String(now + 180)) }
        claim("J34", "iat an hour ahead", [.notYetValid]) { claims, now in claims["iat"] = .number(String(now + 3600)) }
        claim("J35", "exp missing", [.expired]) { claims, _ in claims["exp"] = nil }
        claim("J36", "aud an empty array", [.wrongAudience]) { claims, _ in claims["aud"] = .array([]) }
        claim("J36", "aud missing", [.wrongAudience]) { claims, _ in claims["aud"] = nil }
        claim("J36", "aud null", [.wrongAudience]) { claims, _ in claims["aud"] = .null }
        claim("J36", "aud another string", [.wrongAudience]) { claims, _ in claims["aud"] = .string("someone-else") }
        claim("J36", "aud an array without ours", [.wrongAudience]) { claims, _ in
            claims["aud"] = .array([.string("someone-else"), .string("another")])
        }
        claim("J36", "aud an array of numbers", [.wrongAudience]) { claims, _ in claims["aud"] = .array([.number("1")]) }
        claim("J36", "aud ours in upper case", [.wrongAudience]) { claims, _ in claims["aud"] = .string(Claims.audience.uppercased()) }
        claim("J36", "aud ours with a trailing space", [.wrongAudience]) { claims, _ in claims["aud"] = .string(Claims.audience + " ") }
        for (name, issuer) in [
            ("trailing slash", Claims.issuer + "/"), ("http instead of https", "http://issuer.test"),
            ("upper-case host", "https://ISSUER.test"), ("trailing space", Claims.issuer + " "), ("with a fragment", Claims.issuer + "#"),
        ] {
            claim("J37", "iss \(name)", [.unknownIssuer]) { claims, _ in claims["iss"] = .string(issuer) }
        }
        return attacks
    }()

    @Test(arguments: attacks)
    func attackTokenIsRejectedWithItsReason(_ attack: Attack) async throws {
        try await TestEnvironment.run(signers: Self.signers) { (env: TestEnvironment) async throws in
            try await env.expectAttackRejected(token: attack.makeToken(), reasons: attack.reasons)
        }
    }

    /// The same claims the table uses are accepted when nothing is attacked, or only within the leeway.
    @Test func controlTokensAndLeewayAreAccepted() async throws {
        try await TestEnvironment.run(signers: Self.signers) { (env: TestEnvironment) async throws in
            let now = Int64(Date().timeIntervalSince1970)
            let tokens = [
                Forge.valid(),
                Self.pssSigner.token(claims: Claims.valid()),
                TestSigner.rsa.token(claims: Claims.valid(extra: ["exp": .number(String(now - 30))])),
                TestSigner.rsa.token(claims: Claims.valid(extra: ["nbf": .number(String(now + 30)), "iat": .number(String(now + 30))])),
                TestSigner.rsa.token(claims: Claims.valid(extra: ["aud": .array([.string("x"), .string(Claims.audience)])])),
            ]
            for token in tokens {
                #expect(try await env.request("/v1/orders", token: token).status == 200)
            }
            #expect(env.failureLog.isEmpty)
        }
    }

    // MARK: - Rows with their own test

    /// J03: the provider's public key, in every spelling, used as an HMAC secret.
    @Test func hmacKeyedWithTheProvidersPublicKeyIsRejected() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            let rsa = TestKeys.rsa.publicKey
            let ec = TestKeys.ec.publicKey
            let pem = rsa.pemRepresentation.trimmingCharacters(in: .newlines)
            let secrets: [(kid: String, bytes: [UInt8])] = [
                ("rsa-1", Array(pem.utf8)),
                ("rsa-1", Array((pem + "\n").utf8)),
                ("rsa-1", Array(rsa.pkcs1PEMRepresentation.utf8)),
                ("rsa-1", Array(rsa.derRepresentation)),
                ("rsa-1", Array(rsa.pkcs1DERRepresentation)),
                ("rsa-1", Array(TestSigner.rsa.jwk.compactJSON.utf8)),
                ("rsa-1", Array(TestSigner.jwks([.rsa, .ec, .ed]).utf8)),
                ("ec-1", Array(ec.pemRepresentation.utf8)),
                ("ec-1", Array(ec.derRepresentation)),
                ("ec-1", Array(ec.rawRepresentation)),
                ("ec-1", Array(TestSigner.ec.jwk.compactJSON.utf8)),
            ]
            for (kid, secret) in secrets {
                try await env.expectAttackRejected(token: Forge.hmac(.sha256, key: secret, kid: kid), reasons: [.unsupportedAlgorithm])
            }
            try await env.expectAttackRejected(token: Forge.hmac(.sha384, key: Array(pem.utf8), kid: "rsa-1"), reasons: [.unsupportedAlgorithm])
            try await env.expectAttackRejected(token: Forge.hmac(.sha512, key: Array(pem.utf8), kid: "rsa-1"), reasons: [.unsupportedAlgorithm])
        }
    }

    /// J05: keys and key URLs in the token header are never used, and nothing is fetched from them.
    @Test func headerEmbeddedKeysAndKeyURLsAreNeverUsed() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            let attacker = TestSigner.otherRSA.with(keyID: "rsa-1")
            let attackerURL = "http://127.0.0.1:\(env.jwks.port)/attacker.json"
            let certificate = Data(TestKeys.otherRSA.publicKey.derRepresentation).base64EncodedString()
            let fetchesBefore = env.jwks.fetchCount
            let headers: [[String: JSONValue]] = [
                ["jwk": TestSigner.otherRSA.jwk],
                ["jwk": TestSigner.otherRSA.jwk, "kid": .null],
                ["jku": .string(attackerURL)],
                ["x5u": .string(attackerURL)],
                ["x5c": .array([.string(certificate)])],
                ["jku": .string(attackerURL), "jwk": TestSigner.otherRSA.jwk, "x5u": .string(attackerURL)],
            ]
            for header in headers {
                var members: [String: JSONValue] = ["alg": .string("RS256"), "kid": .string("rsa-1"), "typ": .string("JWT")]
                members.merge(header) { _, new in new }
                members = members.filter { $0.value != .null }
                let token = attacker.token(rawHeader: Forge.json(members), rawPayload: Forge.claims())
                try await env.expectAttackRejected(token: token, reasons: [.badSignature])
            }
            #expect(env.jwks.fetchCount == fetchesBefore)
        }
    }

    /// J08: `kid` is an exact lookup key: nothing in it is interpreted.
    @Test func hostileKidIsOnlyAnExactLookupKey() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            let fetchesBefore = env.jwks.fetchCount
            let kids = [
                "../../etc/passwd", "../../../../../../dev/null", "' OR 1=1--", "\" OR \"\"=\"", "$(reboot)", "`reboot`", "rsa-1; reboot",
                "rsa-1/../rsa-1", "RSA-1", "rsa-1 ", " rsa-1", "%72sa-1", "rsa-1\u{0}", "*", ".*", "{\"$ne\":null}",
            ]
            // The first one is fresh and causes the refetch, whose evidence refuses it; the others were issued an hour before
            // the keys were listed, so they are refused on the set's own evidence (a fresh one within the cooldown gets 503).
            let hourAgo = Int64(Date().timeIntervalSince1970) - 3600
            for (index, kid) in kids.enumerated() {
                let claims = index == 0 ? Claims.valid() : Claims.valid(extra: ["iat": .number(String(hourAgo))])
                try await env.expectAttackRejected(token: TestSigner.rsa.with(keyID: kid).token(claims: claims), reasons: [.unknownKey])
            }
            let numericKid = Forge.signed(header: "{\"alg\":\"RS256\",\"kid\":1}")
            try await env.expectAttackRejected(token: numericKid, reasons: [.malformedToken])
            // One unscheduled refetch per cooldown, however many kids were tried.
            #expect(env.jwks.fetchCount - fetchesBefore <= 1)
        }
    }

    /// J11: bad keys in the published set are skipped one by one; the good key keeps working.
    @Test func badKeysInTheSetAreSkippedAndTheGoodKeyStillWorks() async throws {
        let weakKey = try _RSA.Signing.PrivateKey(unsafeKeySize: .init(bitCount: 1024))
        let weak = TestSigner(key: .rsa(weakKey), keyID: "weak", algorithm: "RS256")
        let otherModulus = Base64URL.encode(Array(try TestKeys.otherRSA.publicKey.getKeyPrimitives().modulus))
        var encryptionKey = try #require(TestSigner.ec.with(keyID: "enc").jwk.objectValue)
        encryptionKey["use"] = .string("enc")
        var offCurve = try #require(TestSigner.ec.with(keyID: "off-curve").jwk.objectValue)
        offCurve["y"] = .string(Base64URL.encode([UInt8](repeating: 0, count: 32)))
        let keys: [JSONValue] = [
            TestSigner.rsa.with(keyID: "dup").jwk,
            TestSigner.otherRSA.with(keyID: "dup").jwk,
            weak.jwk,
            .object(["kty": .string("RSA"), "kid": .string("e-one"), "alg": .string("RS256"), "n": .string(otherModulus), "e": .string("AQ")]),
            .object(encryptionKey),
            .object(offCurve),
            .object(["kty": .string("oct"), "kid": .string("oct"), "alg": .string("HS256"), "k": .string(Forge.encode("secret"))]),
            .object(["kty": .string("XYZ"), "kid": .string("xyz")]),
            .string("not a key"),
            TestSigner.ed.jwk,
        ]
        let body = JSONValue.object(["keys": .array(keys)]).compactJSON
        try await TestEnvironment.run(configure: { _, jwks in jwks.update { $0.body = body } }) { (env: TestEnvironment) async throws in
            #expect(env.gatehouse.keyStore.usableKeys(provider: 0)?.keySet.keys.map(\.keyID) == ["ed-1"])
            #expect(try await env.request("/v1/orders", token: TestSigner.ed.token(claims: Claims.valid())).status == 200)
            let rejected = [
                TestSigner.rsa.with(keyID: "dup").token(claims: Claims.valid()),
                TestSigner.otherRSA.with(keyID: "dup").token(claims: Claims.valid()),
                weak.token(claims: Claims.valid()),
                // With e = 1 the "signature" is the padded digest itself.
                Forge.signed(header: Forge.header(["kid": .string("e-one")]), signature: { RawRSA.pkcs1(RawRSA.digestInfo($0), length: 256) }),
                TestSigner.ec.with(keyID: "enc").token(claims: Claims.valid()),
                TestSigner.ec.with(keyID: "off-curve").token(claims: Claims.valid()),
                TestSigner.ec.with(keyID: "xyz").token(claims: Claims.valid()),
            ]
            // The set lists these kids with keys that were skipped: refused at once (no fetch makes them usable), with why.
            let fetches = env.jwks.fetchCount
            for token in rejected {
                try await env.expectAttackRejected(token: token, reasons: [.unknownKey], validSigner: .ed)
                #expect(env.failureLog.last?["detail"]?.stringValue?.hasPrefix("the provider's key with this kid cannot be used: ") == true)
            }
            #expect(env.jwks.fetchCount == fetches)
            try await env.expectAttackRejected(
                token: Forge.hmac(.sha256, key: Array("secret".utf8), kid: "oct"), reasons: [.unsupportedAlgorithm], validSigner: .ed)
        }
    }

    /// J12: preset providers check the audience; Firebase's project is ours, never the token's.
    @Test func presetProviderTokensForAnotherAudienceAreRejected() async throws {
        try await TestEnvironment.run(configure: Self.presetProviders) { (env: TestEnvironment) async throws in
            let firebase = "https://securetoken.google.com/my-project"
            func token(_ extra: [String: JSONValue], removing: [String] = []) -> String {
                var claims = Claims.valid(extra: extra)
                for name in removing { claims[name] = nil }
                return TestSigner.ec.token(claims: claims)
            }
            // Controls: each preset accepts its own audience.
            let controls = [
                token(["iss": .string("https://accounts.google.com"), "aud": .string("ours.apps.googleusercontent.com")]),
                token(["iss": .string("accounts.google.com"), "aud": .string("ours.apps.googleusercontent.com")]),
                token(["iss": .string("https://appleid.apple.com"), "aud": .string("com.example.app")]),
                token(["iss": .string(firebase), "aud": .string("my-project"), "auth_time": .number(String(Int64(Date().timeIntervalSince1970) - 60))]),
            ]
            for control in controls {
                #expect(try await env.request("/v1/orders", token: control).status == 200)
            }
            let attacks = [
                token(["iss": .string(firebase), "aud": .string("other-project")]),
                token(["iss": .string("https://accounts.google.com"), "aud": .string("theirs.apps.googleusercontent.com")]),
                token(["iss": .string("accounts.google.com"), "aud": .string("theirs.apps.googleusercontent.com")]),
                token(["iss": .string("https://appleid.apple.com"), "aud": .string("com.attacker.app")]),
                token(["iss": .string("https://appleid.apple.com")], removing: ["aud"]),
            ]
            for attack in attacks {
                try await env.expectAttackRejected(token: attack, reasons: [.wrongAudience])
            }
            let otherProject = token(["iss": .string("https://securetoken.google.com/other-project"), "aud": .string("other-project")])
            try await env.expectAttackRejected(token: otherProject, reasons: [.unknownIssuer])
        }
    }

    /// J38: a Cognito pool configured for access tokens refuses ID tokens and other app clients.
    @Test func cognitoIDTokenOrOtherClientIsRejected() async throws {
        try await TestEnvironment.run(configure: Self.presetProviders) { (env: TestEnvironment) async throws in
            let issuer = "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Test"
            func token(_ extra: [String: JSONValue], removing: [String] = ["aud"]) -> String {
                var claims = Claims.valid(extra: extra)
                for name in removing { claims[name] = nil }
                return TestSigner.ec.token(claims: claims)
            }
            let access = token(["iss": .string(issuer), "token_use": .string("access"), "client_id": .string("client-ok")])
            #expect(try await env.request("/v1/orders", token: access).status == 200)
            let idToken = token(["iss": .string(issuer), "token_use": .string("id"), "aud": .string("client-ok")], removing: [])
            try await env.expectAttackRejected(token: idToken, reasons: [.invalidClaims])
            let noUse = token(["iss": .string(issuer), "client_id": .string("client-ok")])
            try await env.expectAttackRejected(token: noUse, reasons: [.invalidClaims])
            let otherClient = token(["iss": .string(issuer), "token_use": .string("access"), "client_id": .string("client-evil")])
            try await env.expectAttackRejected(token: otherClient, reasons: [.wrongAudience])
            let audInstead = token(["iss": .string(issuer), "token_use": .string("access"), "aud": .string("client-ok")], removing: [])
            try await env.expectAttackRejected(token: audInstead, reasons: [.wrongAudience])
        }
    }

    static func presetProviders(_ configuration: inout Configuration, _ jwks: TestJWKSServer) {
        var google = ProviderSettings(name: "google", type: .google)
        google.audiences = ["ours.apps.googleusercontent.com"]
        var apple = ProviderSettings(name: "apple", type: .apple)
        apple.audiences = ["com.example.app"]
        var firebase = ProviderSettings(name: "firebase", type: .firebase)
        firebase.projectID = "my-project"
        var cognito = ProviderSettings(name: "cognito", type: .cognito)
        cognito.region = "eu-west-1"
        cognito.userPoolID = "eu-west-1_Test"
        cognito.clientIDs = ["client-ok"]
        cognito.tokenUse = .access
        for var provider in [google, apple, firebase, cognito] {
            provider.jwksURI = jwks.jwksURL
            configuration.providers.append(provider)
        }
    }

    /// J13: CVE-2022-21449 "psychic signatures": r and s of zero or of the group order.
    @Test func psychicECDSASignaturesAreRejected() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            let genuine = TestSigner.ec.token(claims: Claims.valid())
            let signature = try #require(Forge.signatureBytes(genuine))
            let zero = [UInt8](repeating: 0, count: 32)
            let signatures = [
                zero + zero, Curve.p256Order + Curve.p256Order, zero + Array(signature[32...]), Array(signature[..<32]) + zero,
                Curve.p256Order + Array(signature[32...]), Array(signature[..<32]) + Curve.p256Order,
            ]
            for forged in signatures {
                try await env.expectAttackRejected(token: Forge.withSignature(genuine, forged), reasons: [.badSignature])
            }
        }
    }

    /// J14: ES256 takes exactly the 64-byte `r || s` form.
    @Test func ecdsaSignatureInDERFormOrWrongLengthIsRejected() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            let claims = Claims.valid()
            let header = Forge.header(signer: .ec)
            let input = Forge.encode(header) + "." + Forge.encode(JSONValue.object(claims).compactJSON)
            let signature = try TestKeys.ec.signature(for: Array(input.utf8))
            let raw = Array(signature.rawRepresentation)
            let forms: [[UInt8]] = [Array(signature.derRepresentation), Array(raw.dropLast()), [0] + raw, raw + [0]]
            for form in forms {
                try await env.expectAttackRejected(token: input + "." + Base64URL.encode(form), reasons: [.badSignature])
            }
            // Control: the same signature in its proper form verifies.
            #expect(try await env.request("/v1/orders", token: input + "." + Base64URL.encode(raw)).status == 200)
        }
    }

    /// J15-J18: malformed RSA PKCS #1 v1.5 and PSS encodings made with the provider's own key, and
    /// malleated RSA and Ed25519 signatures. Crafted encodings that are correct verify, so the harness
    /// can tell "rejected for the flaw" from "rejected because the test is broken".
    @Test func malformedRSAAndEdDSASignaturesAreRejected() async throws {
        try await TestEnvironment.run(signers: Self.signers) { (env: TestEnvironment) async throws in
            let rsaHeader = Forge.header()
            let pssHeader = Forge.header(signer: Self.pssSigner)
            let modulusLength = RawRSA.modulus.count
            // Controls.
            let pkcs1 = Forge.signed(header: rsaHeader, signature: { RawRSA.sign(RawRSA.pkcs1(RawRSA.digestInfo($0), length: modulusLength)) })
            #expect(try await env.request("/v1/orders", token: pkcs1).status == 200)
            let pss = Forge.signed(header: pssHeader, signature: { RawRSA.sign(RawRSA.pss($0, saltLength: 32)) })
            #expect(try await env.request("/v1/orders", token: pss).status == 200)

            let digestWithoutNull: ([UInt8]) -> [UInt8] = { input in
                [0x30, 0x2F, 0x30, 0x0B, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x04, 0x20]
                    + Array(SHA256.hash(data: input))
            }
            let forgeries: [(header: String, encode: ([UInt8]) -> [UInt8])] = [
                // J15: PKCS #1 v1.5 variants.
                (rsaHeader, { RawRSA.pkcs1(digestWithoutNull($0), length: modulusLength) }),
                (rsaHeader, { RawRSA.pkcs1(RawRSA.digestInfo($0), length: modulusLength, blockType: 2) }),
                (rsaHeader, { RawRSA.pkcs1(RawRSA.digestInfo($0), length: modulusLength, filler: 0xFE) }),
                (rsaHeader, { RawRSA.pkcs1(RawRSA.digestInfo($0) + [UInt8](repeating: 0x41, count: 64), length: modulusLength) }),
                (rsaHeader, { RawRSA.pkcs1(RawRSA.digestInfo(Array($0.dropLast())), length: modulusLength) }),
                (rsaHeader, { RawRSA.pss($0, saltLength: 32) }),
                // J16: PSS with the wrong salt length, trailer or padding.
                (pssHeader, { RawRSA.pss($0, saltLength: 0) }),
                (pssHeader, { RawRSA.pss($0, saltLength: 20) }),
                (pssHeader, { RawRSA.pss($0, saltLength: 64) }),
                (pssHeader, { RawRSA.pss($0, saltLength: 32, trailer: 0xCC) }),
                (pssHeader, { RawRSA.pkcs1(RawRSA.digestInfo($0), length: modulusLength) }),
            ]
            for forgery in forgeries {
                let token = Forge.signed(header: forgery.header, signature: { RawRSA.sign(forgery.encode($0)) })
                try await env.expectAttackRejected(token: token, reasons: [.badSignature])
            }
            // J17: RSA signature malleability: s + n, a leading zero added or dropped.
            let genuine = Forge.valid()
            let signature = try #require(Forge.signatureBytes(genuine))
            let malleated = [BigEndian.add(signature, RawRSA.modulus), [0] + signature, Array(signature.dropFirst())]
            for bytes in malleated {
                try await env.expectAttackRejected(token: Forge.withSignature(genuine, bytes), reasons: [.badSignature])
            }
            // J18: Ed25519 with S + L (RFC 8032 §5.1.7 requires S < L), and with S zeroed.
            let ed = TestSigner.ed.token(claims: Claims.valid())
            let edSignature = try #require(Forge.signatureBytes(ed))
            let withSPlusL = Array(edSignature[..<32]) + LittleEndian.add(Array(edSignature[32...]), Curve.ed25519Order)
            try await env.expectAttackRejected(token: Forge.withSignature(ed, withSPlusL), reasons: [.badSignature])
            try await env.expectAttackRejected(
                token: Forge.withSignature(ed, Array(edSignature[..<32]) + [UInt8](repeating: 0, count: 32)), reasons: [.badSignature])
            try await env.expectAttackRejected(token: Forge.withSignature(ed, [UInt8](repeating: 0, count: 64)), reasons: [.badSignature])
        }
    }

    /// J19: the header's `alg` must be one the key allows.
    @Test func headerAlgorithmNotMatchingTheKeyIsRejected() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            // The RSA key is published with alg RS256: a genuine PS256 signature by that very key is still refused.
            let pss = TestSigner.rsaPSS.token(claims: Claims.valid())
            try await env.expectAttackRejected(token: pss, reasons: [.unsupportedAlgorithm])
            let rs384 = Forge.signed(header: Forge.header(["alg": .string("RS384")]))
            try await env.expectAttackRejected(token: rs384, reasons: [.unsupportedAlgorithm])
            let esOnRSAKey = TestSigner.ec.token(claims: Claims.valid(), header: ["kid": .string("rsa-1")])
            try await env.expectAttackRejected(token: esOnRSAKey, reasons: [.unsupportedAlgorithm])
            let rsOnECKey = TestSigner.rsa.token(claims: Claims.valid(), header: ["kid": .string("ec-1")])
            try await env.expectAttackRejected(token: rsOnECKey, reasons: [.unsupportedAlgorithm])
            let edDSAOnECKey = TestSigner.ed.token(claims: Claims.valid(), header: ["kid": .string("ec-1")])
            try await env.expectAttackRejected(token: edDSAOnECKey, reasons: [.unsupportedAlgorithm])
        }
    }

    /// J19: an alg-less JWK attacked first with a forged PS256 token still verifies genuine RS256 tokens
    /// (jwt-kit caches the attacker's algorithm for such a key).
    @Test func algorithmlessKeyAttackedFirstStillVerifiesGenuineTokens() async throws {
        var rsa = TestSigner.rsa
        rsa.publishAlgorithm = false
        try await TestEnvironment.run(signers: [rsa]) { (env: TestEnvironment) async throws in
            let forged = TestSigner.rsaPSS.with(keyID: "rsa-1")
            let forgedToken = TestSigner(key: .rsa(TestKeys.otherRSA), keyID: "rsa-1", algorithm: "PS256").token(claims: Claims.valid())
            try await env.expectAttackRejected(token: forgedToken, reasons: [.badSignature], validSigner: rsa)
            try await env.expectAttackRejected(
                token: Forge.withSignature(forged.token(claims: Claims.valid()), [UInt8](repeating: 1, count: 256)),
                reasons: [.badSignature], validSigner: rsa)
            for subject in ["genuine-1", "genuine-2"] {
                let response = try await env.request("/v1/orders", token: rsa.token(claims: Claims.valid(subject: subject)))
                #expect(response.status == 200)
                #expect(env.upstream.last?.value("x-auth-subject") == subject)
            }
        }
    }

    /// J39: huge tokens are refused fast and bounded: over max_header_bytes the head gets 431, over
    /// token_max_bytes the token gets 401 before any parsing.
    @Test func oversizedTokensAreRefusedFast() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            for token in [String(repeating: "a", count: 80 * 1024), String(repeating: ".", count: 40_000)] {
                let started = ContinuousClock.now
                let text = RawHTTP.exchange(port: env.port, "GET /v1/orders HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(token)\r\n\r\n")
                #expect(RawHTTP.statuses(text) == [431])
                #expect(ContinuousClock.now - started < .seconds(2))
            }
            try await env.expectNothingReachedUpstream()
            #expect(env.failureLogLines.isEmpty)
            // 9000 bytes: within the head limit, over token_max_bytes (8192), otherwise valid.
            let big = TestSigner.rsa.token(claims: Claims.valid(extra: ["pad": .string(String(repeating: "p", count: 6300))]))
            #expect((8193...10_000).contains(big.utf8.count))
            try await env.expectAttackRejected(token: big, reasons: [.malformedToken])
        }
        try await TestEnvironment.run(configure: { configuration, _ in
            configuration.listen.maxHeaderBytes = 128 * 1024
            configuration.listen.tokenMaxBytes = 64 * 1024
        }) { (env: TestEnvironment) async throws in
            // With the limits raised the parser itself meets the dots, and gives up early.
            let started = ContinuousClock.now
            try await env.expectAttackRejected(token: String(repeating: ".", count: 40_000), reasons: [.malformedToken])
            try await env.expectAttackRejected(token: String(repeating: "a.", count: 20_000), reasons: [.malformedToken])
            #expect(ContinuousClock.now - started < .seconds(2))
            let text = RawHTTP.exchange(
                port: env.port, "GET /v1/orders HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(String(repeating: "a", count: 1 << 20))\r\n\r\n")
            #expect(RawHTTP.statuses(text) == [431])
        }
    }

    /// J40: deeply nested JSON is refused without exhausting the stack.
    @Test func deeplyNestedJSONIsRejectedWithoutStackOverflow() async throws {
        let depth = 10_000
        let nestedPayload = String(Forge.claims().dropLast()) + ",\"x\":" + String(repeating: "[", count: depth)
            + String(repeating: "]", count: depth) + "}"
        let nestedObjects = String(Forge.claims().dropLast()) + ",\"x\":" + String(repeating: "{\"a\":", count: depth) + "1"
            + String(repeating: "}", count: depth) + "}"
        let nestedHeader = "{\"alg\":\"RS256\",\"kid\":\"rsa-1\",\"x\":" + String(repeating: "[", count: depth)
            + String(repeating: "]", count: depth) + "}"
        try await TestEnvironment.run(configure: { configuration, _ in
            configuration.listen.maxHeaderBytes = 256 * 1024
            configuration.listen.tokenMaxBytes = 128 * 1024
        }) { (env: TestEnvironment) async throws in
            try await env.expectAttackRejected(token: Forge.signed(header: Forge.header(), payload: nestedPayload), reasons: [.malformedToken])
            try await env.expectAttackRejected(token: Forge.signed(header: Forge.header(), payload: nestedObjects), reasons: [.malformedToken])
            try await env.expectAttackRejected(token: Forge.signed(header: nestedHeader), reasons: [.malformedToken])
        }
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            let shallow = String(Forge.claims().dropLast()) + ",\"x\":" + String(repeating: "[", count: 2000)
                + String(repeating: "]", count: 2000) + "}"
            try await env.expectAttackRejected(token: Forge.signed(header: Forge.header(), payload: shallow), reasons: [.malformedToken])
        }
    }

    /// J41: the scheme is case-insensitive and extra spaces are tolerated (docs/reference.md §4).
    @Test func bearerSchemeCaseAndExtraSpacesAreAccepted() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            let token = TestSigner.ec.token(claims: Claims.valid())
            for authorization in ["bearer \(token)", "BEARER \(token)", "BeArEr \(token)", "Bearer  \(token)", "Bearer   \(token)"] {
                let response = try await env.request("/v1/orders", headers: [("Authorization", authorization)])
                #expect(response.status == 200)
                #expect(env.upstream.last?.value("x-auth-subject") == "user-1")
            }
            #expect(env.failureLog.isEmpty)
        }
    }

    /// J54: a token's `iss` names its provider however the JSON spells it (with escapes it is read as a string, not
    /// compared as bytes), and an `iss` one byte off, or only a prefix of the issuer, names none (issue 57: the issuer
    /// is looked up by its bytes).
    @Test func theIssuerIsFoundByItsTextNotItsSpelling() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            let plain = Forge.claims()
            let escaped = plain.replacingOccurrences(of: "\"iss\":\"https://", with: #""iss":"https:\/\/"#)
            let unicode = plain.replacingOccurrences(of: "\"iss\":\"https", with: #""iss":"\u0068ttps"#)
            #expect(escaped != plain && unicode != plain)
            for payload in [plain, escaped, unicode] {
                let token = Forge.signed(header: Forge.header(), payload: payload)
                let response = try await env.request("/v1/orders", headers: [("Authorization", "Bearer \(token)")])
                #expect(response.status == 200, "\(payload)")
                #expect(env.upstream.last?.value("x-auth-subject") == "user-1")
            }
            #expect(env.failureLog.isEmpty)
            for issuer in [Claims.issuer + "x", String(Claims.issuer.dropLast()), Claims.issuer.uppercased()] {
                let payload = plain.replacingOccurrences(of: Claims.issuer, with: issuer)
                try await env.expectAttackRejected(token: Forge.signed(header: Forge.header(), payload: payload), reasons: [.unknownIssuer])
            }
        }
    }

    /// J42: anything but `Bearer <token>` carries no bearer token, or a malformed one.
    @Test func otherAuthorizationShapesAreRejected() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            let token = TestSigner.ec.token(claims: Claims.valid())
            let shapes: [(String, Set<FailureReason>)] = [
                ("Bearer\t\(token)", [.malformedToken]),
                ("Bearer \(token) x", [.malformedToken]),
                ("Bearer x \(token)", [.malformedToken]),
                ("Basic \(token)", [.missingToken]),
                ("Basic dXNlcjpwYXNzd29yZA==", [.missingToken]),
                ("Token \(token)", [.missingToken]),
                ("Bearer\(token)", [.missingToken]),
                ("Bearer", [.malformedToken]),
                ("Bearer \(token), Bearer \(token)", [.malformedToken]),
            ]
            for (authorization, reasons) in shapes {
                try await env.expectAttackRejected(authorization: authorization, token: token, reasons: reasons)
            }
        }
    }

    /// J43: two Authorization headers are refused and never forwarded, whichever comes first.
    @Test func twoAuthorizationHeadersAreRefused() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            let token = TestSigner.ec.token(claims: Claims.valid())
            let pairs = [(token, token), (token, "junk"), ("junk", token)]
            for (first, second) in pairs {
                let linesBefore = env.failureLogLines.count
                let text = RawHTTP.exchange(
                    port: env.port,
                    "GET /v1/orders HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(first)\r\nAuthorization: Bearer \(second)\r\n"
                        + "Connection: close\r\n\r\n")
                #expect(RawHTTP.statuses(text) == [401], "\(text)")
                #expect(text.contains("\"reason\":\"malformed_token\""))
                #expect(env.failureLogLines.count == linesBefore + 1)
                try await env.expectNothingReachedUpstream()
            }
            #expect(try await env.request("/v1/orders", token: token).status == 200)
        }
    }

    /// J44: a token in the query string is never read, and the query never reaches the failure log.
    @Test func queryStringTokenIsIgnoredAndNeverLogged() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            let token = TestSigner.ec.token(claims: Claims.valid())
            let response = try await env.request("/v1/orders?access_token=\(token)")
            #expect(response.status == 401)
            #expect(response.json?["reason"] == .string("missing_token"))
            #expect(response.headers.first(name: "www-authenticate") == "Bearer realm=\"gatehouse\"")
            try await env.expectNothingReachedUpstream()
            let lines = env.failureLogLines
            #expect(lines.count == 1)
            let line = try #require(lines.first)
            #expect(!line.contains("access_token"))
            #expect(!line.contains(token))
            #expect(!line.contains("?"))
            #expect(env.failureLog.first?["path"] == .string("/v1/orders"))
            #expect(try await env.request("/v1/orders", token: token).status == 200)
        }
    }

    /// J45: CR, LF and terminal escapes in a failing token's `kid`, `iss` or `sub`, or in the user agent,
    /// stay inside one escaped JSON line.
    @Test func controlCharactersInFailingTokensStayInOneEscapedLogLine() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            let hostile = "evil\r\n{\"event\":\"auth_success\",\"sub\":\"admin\"}\u{1B}[2J\u{1B}]0;pwned\u{07}\u{7F}\u{2028}"
            let cases: [(token: String, field: String)] = [
                (TestSigner.rsa.with(keyID: hostile).token(claims: Claims.valid()), "kid"),
                (TestSigner.rsa.token(claims: Claims.valid(extra: ["iss": .string(hostile)])), "iss"),
                (TestSigner.rsa.token(claims: Claims.valid(subject: hostile, lifetime: -3600)), "sub"),
            ]
            for (index, attack) in cases.enumerated() {
                #expect(try await env.request("/v1/orders", token: attack.token).status == 401)
                let lines = env.failureLogLines
                #expect(lines.count == index + 1)
                let line = try #require(lines.last)
                #expect(!line.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F || $0.value == 0x2028 })
                let object = try StrictJSON.parse(Array(line.utf8)).objectValue
                #expect(object?[attack.field] == .string(hostile))
            }
            // The user agent is the client's too, but a control byte in any field value is refused by the
            // request parser (HTTP/1.1) and at HTTP/2 intake before anything is judged, so it never reaches a line.
            let linesBefore = env.failureLogLines.count
            let text = RawHTTP.exchange(
                port: env.port, "GET /v1/orders HTTP/1.1\r\nHost: a\r\nUser-Agent: ua\u{1B}[31mred\u{1B}[0m\r\nConnection: close\r\n\r\n")
            #expect(RawHTTP.statuses(text) == [400], "\(text)")
            #expect(env.failureLogLines.count == linesBefore)
            try await env.expectNothingReachedUpstream()
            #expect(try await env.request("/v1/orders", token: TestSigner.ec.token(claims: Claims.valid())).status == 200)
        }
    }
}

// MARK: - Assertions

extension TestEnvironment {
    /// docs/security.md's default answer to an attack token: `status` (401) with one of `reasons` in the body and an
    /// RFC 6750 challenge, nothing upstream, exactly one failure-log line with that reason and never the token,
    /// and the sidecar still serves a valid token afterwards.
    func expectAttackRejected(
        token: String, reasons: Set<FailureReason>, path: String = "/v1/orders", validSigner: TestSigner = .ec,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        try await expectAttackRejected(
            authorization: "Bearer \(token)", token: token, reasons: reasons, path: path, validSigner: validSigner,
            sourceLocation: sourceLocation)
    }

    func expectAttackRejected(
        authorization: String, token: String, reasons: Set<FailureReason>, path: String = "/v1/orders",
        validSigner: TestSigner = .ec, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let linesBefore = failureLogLines.count
        let upstreamBefore = upstream.requestCount
        let trafficBefore = upstream.traffic
        let metricsBefore = try await authFailureCounts()
        let response = try await request(path, headers: [("Authorization", authorization)])
        #expect(response.status == 401, sourceLocation: sourceLocation)
        let reason = response.json?["reason"]?.stringValue.flatMap(FailureReason.init(rawValue:))
        #expect(reason.map(reasons.contains) == true, "reason \(reason?.rawValue ?? "none"), expected one of \(reasons.map(\.rawValue).sorted())",
                sourceLocation: sourceLocation)
        let challenge = response.headers.first(name: "www-authenticate") ?? ""
        if reason == .missingToken {
            #expect(challenge == "Bearer realm=\"gatehouse\"", sourceLocation: sourceLocation)
            #expect(response.json?["error"] == .string("invalid_request"), sourceLocation: sourceLocation)
        } else {
            #expect(challenge.hasPrefix("Bearer realm=\"gatehouse\""), sourceLocation: sourceLocation)
            #expect(challenge.contains("error=\"invalid_token\""), "challenge: \(challenge)", sourceLocation: sourceLocation)
            #expect(response.json?["error"] == .string("invalid_token"), sourceLocation: sourceLocation)
        }
        try await expectNothingReachedUpstream(since: trafficBefore, "by the attack", sourceLocation: sourceLocation)
        let lines = Array(failureLogLines.dropFirst(linesBefore))
        #expect(lines.count == 1, "\(lines.count) failure-log lines", sourceLocation: sourceLocation)
        let line = try #require(lines.first, sourceLocation: sourceLocation)
        let object = try #require(try? StrictJSON.parse(Array(line.utf8)).objectValue, "not one JSON object: \(line)", sourceLocation: sourceLocation)
        let reasonLogged = try #require(reason, sourceLocation: sourceLocation)
        FailureLineExpectation(
            reason: reasonLogged, status: 401, method: "GET", path: path, requestID: response.headers.first(name: "x-request-id"),
            token: token, presentedAsBearer: authorization == "Bearer \(token)"
        ).check(object, line: line, sourceLocation: sourceLocation)
        let metricsAfter = try await authFailureCounts()
        let series = AuthFailureSeries(reason: reasonLogged.rawValue, provider: object["provider"]?.stringValue ?? "")
        #expect(metricsAfter[series, default: 0] == metricsBefore[series, default: 0] + 1,
                "gatehouse_auth_failures_total\(series) did not count the attack once", sourceLocation: sourceLocation)
        // Still serving: a valid token right after is forwarded and logs nothing.
        let valid = try await request(path, token: validSigner.token(claims: Claims.valid()))
        #expect(valid.status == 200, "a valid token afterwards got \(valid.status)", sourceLocation: sourceLocation)
        #expect(upstream.requestCount == upstreamBefore + 1, sourceLocation: sourceLocation)
        #expect(failureLogLines.count == linesBefore + 1, sourceLocation: sourceLocation)
    }
}

// MARK: - Forging tokens

extension TokenAttackTests {
    /// Builds attack tokens: signed by a test key, wrong in exactly one way.
    enum Forge {
        static func encode(_ text: String) -> String { Base64URL.encode(Array(text.utf8)) }

        static func json(_ members: [String: JSONValue]) -> String { JSONValue.object(members).compactJSON }

        /// `Claims.valid()` as JSON text.
        static func claims() -> String { json(Claims.valid()) }

        /// The signer's usual header with `overrides` applied.
        static func header(_ overrides: [String: JSONValue] = [:], signer: TestSigner = .rsa) -> String {
            var members: [String: JSONValue] = ["alg": .string(signer.algorithm), "kid": .string(signer.keyID), "typ": .string("JWT")]
            members.merge(overrides) { _, new in new }
            return json(members)
        }

        /// A valid RS256 token, optionally re-minted (new `jti`) until `accept` likes it.
        static func valid(where accept: (String) -> Bool = { _ in true }) -> String {
            for attempt in 0..<1000 {
                let token = TestSigner.rsa.token(claims: Claims.valid(extra: ["jti": .string("attempt-\(attempt)")]))
                if accept(String(token.split(separator: ".")[2])) { return token }
            }
            return TestSigner.rsa.token(claims: Claims.valid())
        }

        /// Exactly these header and payload texts, genuinely signed with `signer`'s key and algorithm.
        static func signed(header: String, payload: String = claims(), signer: TestSigner = .rsa) -> String {
            signer.token(rawHeader: header, rawPayload: payload)
        }

        /// Segments produced by `segmentEncoding`, signed over exactly what is sent.
        static func signed(header: String, payload: String = claims(), segmentEncoding: (String) -> String) -> String {
            let input = segmentEncoding(header) + "." + segmentEncoding(payload)
            return input + "." + Base64URL.encode(TestSigner.rsa.signature(for: input))
        }

        /// Header and payload bytes that need not be UTF-8 or JSON, genuinely signed with RS256.
        static func signed(headerBytes: [UInt8], payloadBytes: [UInt8]) -> String {
            let input = Base64URL.encode(headerBytes) + "." + Base64URL.encode(payloadBytes)
            return input + "." + Base64URL.encode(TestSigner.rsa.signature(for: input))
        }

        /// A token whose signature segment is `signature(signingInput)`, whatever bytes that makes.
        static func signed(header: String, payload: String = claims(), signature: ([UInt8]) -> [UInt8]) -> String {
            let input = encode(header) + "." + encode(payload)
            return input + "." + Base64URL.encode(signature(Array(input.utf8)))
        }

        /// HS256/384/512 over a valid payload, keyed with `key`.
        static func hmac(_ hash: HMACHash, key: [UInt8], kid: String) -> String {
            let input = encode(header(["alg": .string(hash.algorithm), "kid": .string(kid)])) + "." + encode(claims())
            let secret = SymmetricKey(data: key)
            let mac: [UInt8] = switch hash {
            case .sha256: Array(HMAC<SHA256>.authenticationCode(for: Array(input.utf8), using: secret))
            case .sha384: Array(HMAC<SHA384>.authenticationCode(for: Array(input.utf8), using: secret))
            case .sha512: Array(HMAC<SHA512>.authenticationCode(for: Array(input.utf8), using: secret))
            }
            return input + "." + Base64URL.encode(mac)
        }

        enum HMACHash {
            case sha256, sha384, sha512
            var algorithm: String {
                switch self {
                case .sha256: "HS256"
                case .sha384: "HS384"
                case .sha512: "HS512"
                }
            }
        }

        static func withSegment(_ token: String, _ index: Int, _ text: String) -> String {
            var parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            parts[index] = text
            return parts.joined(separator: ".")
        }

        static func withSignature(_ token: String, _ signature: [UInt8]) -> String {
            withSegment(token, 2, Base64URL.encode(signature))
        }

        static func signatureBytes(_ token: String) -> [UInt8]? {
            token.split(separator: ".", omittingEmptySubsequences: false).last.flatMap { Base64URL.decode(Array($0.utf8)) }
        }
    }

    /// The raw RSA private operation on the RSA test key (`TestKeys.rsa`), to build encodings swift-crypto will not:
    /// swift-crypto's blind-signing key computes `m^d mod n` with no padding at all.
    enum RawRSA {
        static let privateKey = try! _RSA.BlindSigning.PrivateKey(derRepresentation: TestKeys.rsa.derRepresentation)  // test fixture
        static let modulus: [UInt8] = Array(try! TestKeys.rsa.publicKey.getKeyPrimitives().modulus)  // test fixture

        static func sign(_ encodedMessage: [UInt8]) -> [UInt8] {
            Array(try! privateKey.blindSignature(for: encodedMessage).rawRepresentation)  // test fixture: input is modulus-sized
        }

        /// DER DigestInfo for SHA-256 of `input` (RFC 8017 §9.2 note 1).
        static func digestInfo(_ input: [UInt8]) -> [UInt8] {
            [0x30, 0x31, 0x30, 0x0D, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00, 0x04, 0x20]
                + Array(SHA256.hash(data: input))
        }

        /// EMSA-PKCS1-v1_5: `00 || blockType || filler... || 00 || digestInfo`, `length` bytes long.
        static func pkcs1(_ digestInfo: [UInt8], length: Int, blockType: UInt8 = 1, filler: UInt8 = 0xFF) -> [UInt8] {
            [0x00, blockType] + [UInt8](repeating: filler, count: length - 3 - digestInfo.count) + [0x00] + digestInfo
        }

        /// EMSA-PSS with SHA-256 and MGF1-SHA-256 (RFC 8017 §9.1.1) for a 2048-bit modulus.
        static func pss(_ input: [UInt8], saltLength: Int, trailer: UInt8 = 0xBC) -> [UInt8] {
            let length = modulus.count
            let digest = Array(SHA256.hash(data: input))
            let salt = (0..<saltLength).map { _ in UInt8.random(in: 0...255) }
            let hash = Array(SHA256.hash(data: [UInt8](repeating: 0, count: 8) + digest + salt))
            var block = [UInt8](repeating: 0, count: length - saltLength - hash.count - 2) + [0x01] + salt
            let mask = mgf1(hash, length: block.count)
            for index in block.indices { block[index] ^= mask[index] }
            block[0] &= 0x7F  // emBits = 2047: the top bit is zero
            return block + hash + [trailer]
        }

        private static func mgf1(_ seed: [UInt8], length: Int) -> [UInt8] {
            var output: [UInt8] = []
            var counter: UInt32 = 0
            while output.count < length {
                output += SHA256.hash(data: seed + withUnsafeBytes(of: counter.bigEndian) { Array($0) })
                counter += 1
            }
            return Array(output.prefix(length))
        }
    }

    enum Curve {
        /// The order n of P-256, big-endian.
        static let p256Order: [UInt8] = [
            0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
            0xBC, 0xE6, 0xFA, 0xAD, 0xA7, 0x17, 0x9E, 0x84, 0xF3, 0xB9, 0xCA, 0xC2, 0xFC, 0x63, 0x25, 0x51,
        ]
        /// The order L of the Ed25519 base point, little-endian as in signatures.
        static let ed25519Order: [UInt8] = [
            0xED, 0xD3, 0xF5, 0x5C, 0x1A, 0x63, 0x12, 0x58, 0xD6, 0x9C, 0xF7, 0xA2, 0xDE, 0xF9, 0xDE, 0x14,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10,
        ]
    }

    enum BigEndian {
        /// `a + b` for equal-length big-endian integers; one byte longer on carry.
        static func add(_ a: [UInt8], _ b: [UInt8]) -> [UInt8] {
            Array(LittleEndian.add(a.reversed(), b.reversed()).reversed())
        }
    }

    enum LittleEndian {
        /// `a + b` for equal-length little-endian integers; one byte longer on carry.
        static func add(_ a: [UInt8], _ b: [UInt8]) -> [UInt8] {
            var result: [UInt8] = []
            var carry: UInt16 = 0
            for (x, y) in zip(a, b) {
                let sum = UInt16(x) + UInt16(y) + carry
                result.append(UInt8(truncatingIfNeeded: sum))
                carry = sum >> 8
            }
            if carry > 0 { result.append(UInt8(carry)) }
            return result
        }
    }
}
