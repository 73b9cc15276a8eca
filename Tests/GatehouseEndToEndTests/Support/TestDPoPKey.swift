import Crypto
import Foundation
@testable import Gatehouse
import GatehouseSyntax

/// A DPoP client's key pair (P-256) and the proofs it signs (RFC 9449 §4.2), with every part a test
/// may want wrong. The thumbprint is computed here from the RFC 7638 text, not by Gatehouse's code.
struct TestDPoPKey: Sendable {
    let key: P256.Signing.PrivateKey

    init(_ key: P256.Signing.PrivateKey = P256.Signing.PrivateKey()) {
        self.key = key
    }

    private var coordinates: (x: String, y: String) {
        let raw = Array(key.publicKey.rawRepresentation)
        return (Base64URL.encode(raw[0..<32]), Base64URL.encode(raw[32..<64]))
    }

    var jwk: [String: JSONValue] {
        ["kty": .string("EC"), "crv": .string("P-256"), "x": .string(coordinates.x), "y": .string(coordinates.y)]
    }

    /// The key pair as a private JWK, for a client written elsewhere.
    var privateJWK: String {
        var members = jwk
        members["d"] = .string(Base64URL.encode(Array(key.rawRepresentation)))
        return JSONValue.object(members).compactJSON
    }

    /// RFC 7638 §3: the required members in lexicographic order, no whitespace, SHA-256, base64url.
    var thumbprint: String {
        let canonical = #"{"crv":"P-256","kty":"EC","x":"\#(coordinates.x)","y":"\#(coordinates.y)"}"#
        return Base64URL.encode(SHA256.hash(data: Array(canonical.utf8)))
    }

    /// An access token of the test provider bound to this key (`cnf.jkt`).
    func boundToken(extra: [String: JSONValue] = [:]) -> String {
        TestSigner.ec.token(claims: Claims.valid(extra: ["cnf": .object(["jkt": .string(thumbprint)])].merging(extra) { _, new in new }))
    }

    /// A proof for `method` `url` presenting `token`; `claims` and `header` override (`.null` removes a member).
    func proof(
        _ method: String, _ url: String, token: String?, nonce: String? = nil, claims: [String: JSONValue] = [:],
        header: [String: JSONValue] = [:], signedBy signer: P256.Signing.PrivateKey? = nil
    ) -> String {
        var payload: [String: JSONValue] = [
            "jti": .string(UUID().uuidString), "htm": .string(method), "htu": .string(url),
            "iat": .number(String(Int64(Date().timeIntervalSince1970))),
        ]
        if let token { payload["ath"] = .string(Self.accessTokenHash(token)) }
        if let nonce { payload["nonce"] = .string(nonce) }
        var headerMembers: [String: JSONValue] = ["typ": .string("dpop+jwt"), "alg": .string("ES256"), "jwk": .object(jwk)]
        for (name, value) in claims { payload[name] = value == .null ? nil : value }
        for (name, value) in header { headerMembers[name] = value == .null ? nil : value }
        let signingInput = Base64URL.encode(Array(JSONValue.object(headerMembers).compactJSON.utf8)) + "."
            + Base64URL.encode(Array(JSONValue.object(payload).compactJSON.utf8))
        let signature = try! (signer ?? key).signature(for: Array(signingInput.utf8))  // test fixture
        return signingInput + "." + Base64URL.encode(Array(signature.rawRepresentation))
    }

    static func accessTokenHash(_ token: String) -> String {
        Base64URL.encode(SHA256.hash(data: Array(token.utf8)))
    }
}
