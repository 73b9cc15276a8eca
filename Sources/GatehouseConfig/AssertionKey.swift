import Crypto
import Foundation
package import GatehouseSyntax
import GatehouseVocabulary

/// A key of the identity assertion (`[assertion]`, docs/reference.md §15): EC P-256 (ES256) or Ed25519
/// (EdDSA). The signing key has its private half; a key only published beside it (rotation) may not.
/// Its `kid` is its RFC 7638 thumbprint, so the same key always has the same id on every replica.
public struct AssertionKey: Sendable, Equatable {
    enum Material: Sendable {
        case p256(P256.Signing.PublicKey, P256.Signing.PrivateKey?)
        case ed25519(Curve25519.Signing.PublicKey, Curve25519.Signing.PrivateKey?)
    }

    let material: Material
    /// The public JWK, `kid`, `alg` and `use` included: what the JWKS publishes.
    package let jwk: [String: JSONValue]
    public let keyID: String
    /// `ES256` or `EdDSA`.
    public let algorithm: String

    init(_ material: Material) {
        self.material = material
        var jwk: [String: JSONValue]
        switch material {
        case .p256(let publicKey, _):
            let point = Array(publicKey.x963Representation)  // 0x04 || x || y
            jwk = ["kty": .string("EC"), "crv": .string("P-256"), "x": .string(Base64URL.encode(point[1...32])),
                   "y": .string(Base64URL.encode(point[33...64]))]
            algorithm = "ES256"
        case .ed25519(let publicKey, _):
            jwk = ["kty": .string("OKP"), "crv": .string("Ed25519"), "x": .string(Base64URL.encode(publicKey.rawRepresentation))]
            algorithm = "EdDSA"
        }
        // Every member RFC 7638 needs is set above: the thumbprint cannot fail.
        keyID = JWKThumbprint.sha256(of: jwk) ?? ""
        jwk["kid"] = .string(keyID)
        jwk["alg"] = .string(algorithm)
        jwk["use"] = .string("sig")
        self.jwk = jwk
    }

    /// A fresh P-256 key (`gatehouse demo`).
    public static func generated() -> AssertionKey {
        let key = P256.Signing.PrivateKey()
        return AssertionKey(.p256(key.publicKey, key))
    }

    var canSign: Bool {
        switch material {
        case .p256(_, let privateKey): privateKey != nil
        case .ed25519(_, let privateKey): privateKey != nil
        }
    }

    /// The same key without its private half: what a published key is, whatever file it came from.
    var publicOnly: AssertionKey {
        switch material {
        case .p256(let publicKey, _): AssertionKey(.p256(publicKey, nil))
        case .ed25519(let publicKey, _): AssertionKey(.ed25519(publicKey, nil))
        }
    }

    /// The JWS signature of `input` (ES256: `r || s`, 64 bytes, RFC 7518 §3.4; EdDSA: RFC 8037 §3.1).
    package func sign(_ input: [UInt8]) throws -> [UInt8] {
        switch material {
        case .p256(_, let privateKey?): return Array(try privateKey.signature(for: input).rawRepresentation)
        case .ed25519(_, let privateKey?): return Array(try privateKey.signature(for: input))
        case .p256(_, nil), .ed25519(_, nil): throw AssertionKeyError("key \(keyID) has no private half")
        }
    }

    public static func == (lhs: AssertionKey, rhs: AssertionKey) -> Bool {
        lhs.keyID == rhs.keyID && lhs.canSign == rhs.canSign
    }
}

/// Why a key file cannot serve: said at the key's path by `check-config`.
struct AssertionKeyError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
