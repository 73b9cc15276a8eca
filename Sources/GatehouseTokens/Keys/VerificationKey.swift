package import Crypto
public import GatehouseVocabulary

/// A public key loaded from a JWK set, together with the algorithms it may verify.
///
/// `algorithms` comes from the JWK (`alg`) and the provider's configuration, never from a token,
/// so a token cannot choose how its signature is checked (RFC 8725 §3.1).
public struct VerificationKey: Sendable {
    /// The JWK's `kid`, if it had one.
    public let keyID: String?
    /// The algorithms this key may verify.
    public let algorithms: Set<JWSAlgorithm>
    private let backing: Backing

    package enum Backing: Sendable {
        case rsa(PreparedRSAKey)
        case p256(P256.Signing.PublicKey)
        case p384(P384.Signing.PublicKey)
        case p521(P521.Signing.PublicKey)
        case ed25519(Curve25519.Signing.PublicKey)
    }

    package init(keyID: String?, algorithms: Set<JWSAlgorithm>, backing: Backing) {
        self.keyID = keyID
        self.algorithms = algorithms
        self.backing = backing
    }

    /// The key's type for logs and diagnostics, e.g. `RSA-2048`, `EC P-256`, `OKP Ed25519`.
    public var keyType: String {
        switch backing {
        case .rsa(let key): "RSA-\(key.modulusBits)"
        case .p256: "EC P-256"
        case .p384: "EC P-384"
        case .p521: "EC P-521"
        case .ed25519: "OKP Ed25519"
        }
    }

    /// Whether `signature` is a valid `algorithm` signature of `signingInput` under this key.
    ///
    /// `false` whenever `algorithm` is not one of `algorithms`. RS* use PKCS #1 v1.5, PS* use PSS with
    /// MGF1 and a salt as long as the digest (RFC 7518 §3.5), both on a key prepared once
    /// (`PreparedRSAKey`); ES* take only the fixed-length `r || s` form, never DER, and EdDSA
    /// is Ed25519.
    public func isValidSignature(_ signature: [UInt8], for signingInput: [UInt8], algorithm: JWSAlgorithm) -> Bool {
        isValidSignature(signature, for: signingInput[...], algorithm: algorithm)
    }

    /// `isValidSignature(_:for:algorithm:)` of a slice (a token's `CompactJWS.signingInput`), without copying it.
    public func isValidSignature(_ signature: [UInt8], for signingInput: ArraySlice<UInt8>, algorithm: JWSAlgorithm) -> Bool {
        guard algorithms.contains(algorithm) else { return false }
        switch (backing, algorithm) {
        case (.rsa(let key), _):
            return key.isValidSignature(signature, for: signingInput, algorithm: algorithm)
        case (.p256(let key), .es256):
            // rawRepresentation only accepts exactly 2 x 32 bytes, so DER can never get through.
            guard let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature) else { return false }
            return key.isValidSignature(ecdsa, for: signingInput)
        case (.p384(let key), .es384):
            guard let ecdsa = try? P384.Signing.ECDSASignature(rawRepresentation: signature) else { return false }
            return key.isValidSignature(ecdsa, for: signingInput)
        case (.p521(let key), .es512):
            guard let ecdsa = try? P521.Signing.ECDSASignature(rawRepresentation: signature) else { return false }
            return key.isValidSignature(ecdsa, for: signingInput)
        case (.ed25519(let key), .edDSA):
            guard signature.count == 64 else { return false }
            return key.isValidSignature(signature, for: signingInput)
        default:
            return false
        }
    }
}
