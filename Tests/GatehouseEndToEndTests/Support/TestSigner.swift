import Crypto
import Foundation
@testable import Gatehouse
import _CryptoExtras
import GatehouseSyntax
import GatehouseAuth

/// A signing key for tests, with its public JWK and a way to mint any token, well-formed or not.
struct TestSigner: Sendable {
    enum Key: Sendable {
        case rsa(_RSA.Signing.PrivateKey)
        case p256(P256.Signing.PrivateKey)
        case ed25519(Curve25519.Signing.PrivateKey)
    }

    let key: Key
    let keyID: String
    let algorithm: String
    /// Put `alg` in the published JWK (false: an alg-less JWK, docs/security.md J19).
    var publishAlgorithm = true

    static let rsa = TestSigner(key: .rsa(TestKeys.rsa), keyID: "rsa-1", algorithm: "RS256")
    static let rsaPSS = TestSigner(key: .rsa(TestKeys.rsa), keyID: "rsa-1", algorithm: "PS256")
    static let otherRSA = TestSigner(key: .rsa(TestKeys.otherRSA), keyID: "rsa-2", algorithm: "RS256")
    static let ec = TestSigner(key: .p256(TestKeys.ec), keyID: "ec-1", algorithm: "ES256")
    static let ed = TestSigner(key: .ed25519(TestKeys.ed), keyID: "ed-1", algorithm: "EdDSA")

    func with(keyID: String) -> TestSigner {
        var copy = TestSigner(key: key, keyID: keyID, algorithm: algorithm)
        copy.publishAlgorithm = publishAlgorithm
        return copy
    }

    /// The public JWK as a provider would publish it.
    var jwk: JSONValue {
        var members: [String: JSONValue] = ["kid": .string(keyID), "use": .string("sig")]
        if publishAlgorithm { members["alg"] = .string(algorithm) }
        switch key {
        case .rsa(let privateKey):
            let primitives = try! privateKey.publicKey.getKeyPrimitives()  // test fixture
            members["kty"] = .string("RSA")
            members["n"] = .string(Base64URL.encode(Array(primitives.modulus)))
            members["e"] = .string(Base64URL.encode(Array(primitives.publicExponent)))
        case .p256(let privateKey):
            let raw = Array(privateKey.publicKey.rawRepresentation)
            members["kty"] = .string("EC")
            members["crv"] = .string("P-256")
            members["x"] = .string(Base64URL.encode(raw[0..<32]))
            members["y"] = .string(Base64URL.encode(raw[32..<64]))
        case .ed25519(let privateKey):
            members["kty"] = .string("OKP")
            members["crv"] = .string("Ed25519")
            members["x"] = .string(Base64URL.encode(Array(privateKey.publicKey.rawRepresentation)))
        }
        return .object(members)
    }

    static func jwks(_ signers: [TestSigner]) -> String {
        JSONValue.object(["keys": .array(signers.map(\.jwk))]).compactJSON
    }

    /// Signs `header.payload` (both already base64url) with this key under `algorithm`.
    func signature(for signingInput: String, algorithm: String? = nil) -> [UInt8] {
        let input = Array(signingInput.utf8)
        switch (key, algorithm ?? self.algorithm) {
        case (.rsa(let privateKey), "PS256"):
            return Array(try! privateKey.signature(for: SHA256.hash(data: input), padding: .PSS).rawRepresentation)
        case (.rsa(let privateKey), _):
            return Array(try! privateKey.signature(for: SHA256.hash(data: input), padding: .insecurePKCS1v1_5).rawRepresentation)
        case (.p256(let privateKey), _):
            return Array(try! privateKey.signature(for: input).rawRepresentation)
        case (.ed25519(let privateKey), _):
            return Array(try! privateKey.signature(for: input))
        }
    }

    /// A signed compact JWS. `header` members override the defaults (`alg`, `kid`, `typ`).
    func token(claims: [String: JSONValue], header: [String: JSONValue] = [:]) -> String {
        var fullHeader: [String: JSONValue] = ["alg": .string(algorithm), "kid": .string(keyID), "typ": .string("JWT")]
        fullHeader.merge(header) { _, new in new }
        return token(rawHeader: JSONValue.object(fullHeader).compactJSON, rawPayload: JSONValue.object(claims).compactJSON)
    }

    /// A signed compact JWS over exactly these header and payload texts.
    func token(rawHeader: String, rawPayload: String, algorithm: String? = nil) -> String {
        let signingInput = Base64URL.encode(Array(rawHeader.utf8)) + "." + Base64URL.encode(Array(rawPayload.utf8))
        return signingInput + "." + Base64URL.encode(signature(for: signingInput, algorithm: algorithm))
    }
}

enum TestKeys {
    static let rsa = try! _RSA.Signing.PrivateKey(keySize: .bits2048)  // test fixture
    static let otherRSA = try! _RSA.Signing.PrivateKey(keySize: .bits2048)  // test fixture
    static let ec = P256.Signing.PrivateKey()
    static let ed = Curve25519.Signing.PrivateKey()
}

/// Standard claims for the test provider.
enum Claims {
    static let issuer = "https://issuer.test"
    static let audience = "orders-api"

    static func valid(
        subject: String = "user-1", lifetime: Int64 = 600, extra: [String: JSONValue] = [:]
    ) -> [String: JSONValue] {
        let now = Int64(Date().timeIntervalSince1970)
        var claims: [String: JSONValue] = [
            "iss": .string(issuer), "aud": .string(audience), "sub": .string(subject),
            "iat": .number(String(now - 10)), "exp": .number(String(now + lifetime)),
            "email": .string("ada@example.com"), "email_verified": .bool(true),
        ]
        claims.merge(extra) { _, new in new }
        return claims
    }
}
