import Crypto
import _CryptoExtras
import GatehouseSyntax
import GatehouseVocabulary

/// Turns one JWK (RFC 7517 §4, RFC 7518 §6, RFC 8037) into a `VerificationKey`, or says why not.
///
/// Only public signature keys are loaded: symmetric keys (`oct`) never, since a sidecar holding an
/// HMAC "secret" taken from a public document is the algorithm-confusion attack; private keys never,
/// since a published private key is compromised and loading it would only spread it.
enum JWKDecoder {
    enum Outcome {
        case key(VerificationKey)
        case skipped(SkippedKey)
    }

    /// Members that only private (or symmetric) keys have.
    private static let privateMembers = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"]

    /// Below this an RSA key is too weak to trust (RFC 7518 §3.3 requires 2048 bits).
    static let minimumRSAModulusBits = 2048

    static func decode(_ entry: JSONValue, allowedAlgorithms: Set<JWSAlgorithm>) -> Outcome {
        guard case .object(let jwk) = entry else {
            return .skipped(SkippedKey(keyID: nil, reason: "not a JSON object"))
        }
        var keyID: String?
        if let value = jwk["kid"] {
            guard case .string(let kid) = value else { return .skipped(SkippedKey(keyID: nil, reason: "kid is not a string")) }
            guard !kid.isEmpty else { return .skipped(SkippedKey(keyID: kid, reason: "kid is empty")) }
            keyID = kid
        }
        do {
            let key = try decodeKey(jwk, keyID: keyID, allowedAlgorithms: allowedAlgorithms)
            return .key(key)
        } catch {
            return .skipped(SkippedKey(keyID: keyID, reason: error.reason))
        }
    }

    private struct Rejection: Error {
        let reason: String
        init(_ reason: String) { self.reason = reason }
    }

    private static func decodeKey(
        _ jwk: [String: JSONValue], keyID: String?, allowedAlgorithms: Set<JWSAlgorithm>
    ) throws(Rejection) -> VerificationKey {
        guard case .string(let keyType)? = jwk["kty"] else { throw Rejection("kty is missing or not a string") }
        if keyType == "oct" { throw Rejection("symmetric key (kty oct) is never loaded") }
        guard ["RSA", "EC", "OKP"].contains(keyType) else { throw Rejection("unsupported kty \(quoted(keyType))") }
        if let member = privateMembers.first(where: { jwk[$0] != nil }) {
            throw Rejection("contains private key member \(quoted(member)); private keys are never loaded")
        }
        if let use = jwk["use"], use != .string("sig") {
            throw Rejection("use is not \"sig\"")
        }
        if let operations = jwk["key_ops"] {
            guard case .array(let list) = operations, list.allSatisfy({ $0.stringValue != nil }) else {
                throw Rejection("key_ops is not an array of strings")
            }
            guard list.contains(.string("verify")) else { throw Rejection("key_ops does not include \"verify\"") }
        }
        var declaredAlgorithm: JWSAlgorithm?
        if let value = jwk["alg"] {
            guard case .string(let name) = value else { throw Rejection("alg is not a string") }
            guard let algorithm = JWSAlgorithm(rawValue: name) else {
                throw Rejection("alg \(quoted(name)) is not a supported JWS signature algorithm")
            }
            declaredAlgorithm = algorithm
        }

        let (backing, capabilities) = try keyMaterial(jwk, keyType: keyType)

        let algorithms: Set<JWSAlgorithm>
        if let declaredAlgorithm {
            guard capabilities.contains(declaredAlgorithm) else {
                throw Rejection("alg \(declaredAlgorithm.rawValue) does not fit this key (\(describe(keyType, jwk)))")
            }
            guard allowedAlgorithms.contains(declaredAlgorithm) else {
                throw Rejection("alg \(declaredAlgorithm.rawValue) is not allowed for this provider")
            }
            algorithms = [declaredAlgorithm]
        } else {
            algorithms = capabilities.intersection(allowedAlgorithms)
            guard !algorithms.isEmpty else { throw Rejection("no allowed algorithm fits this key (\(describe(keyType, jwk)))") }
        }
        return VerificationKey(keyID: keyID, algorithms: algorithms, backing: backing)
    }

    private static func keyMaterial(
        _ jwk: [String: JSONValue], keyType: String
    ) throws(Rejection) -> (VerificationKey.Backing, Set<JWSAlgorithm>) {
        switch keyType {
        case "RSA":
            return (try rsaKey(jwk), [.rs256, .rs384, .rs512, .ps256, .ps384, .ps512])
        case "EC":
            return try ecKey(jwk)
        default:
            guard case .string(let curve)? = jwk["crv"] else { throw Rejection("crv is missing or not a string") }
            guard curve == "Ed25519" else { throw Rejection("unsupported OKP crv \(quoted(curve))") }
            let x = try coordinate("x", of: jwk, byteCount: 32)
            guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: x) else {
                throw Rejection("invalid Ed25519 public key")
            }
            return (.ed25519(key), [.edDSA])
        }
    }

    private static func rsaKey(_ jwk: [String: JSONValue]) throws(Rejection) -> VerificationKey.Backing {
        // Some issuers prefix the big-endian integers with a zero byte; that changes nothing, so it is tolerated.
        let modulus = try bytes("n", of: jwk).drop { $0 == 0 }
        let exponent = try bytes("e", of: jwk).drop { $0 == 0 }
        let bits = modulus.first.map { (modulus.count - 1) * 8 + (8 - $0.leadingZeroBitCount) } ?? 0
        guard bits >= minimumRSAModulusBits else {
            throw Rejection("RSA modulus is \(bits) bits; at least \(minimumRSAModulusBits) are required")
        }
        // e = 1 makes "signatures" that are the padded message itself; even e is not a valid RSA key.
        guard let last = exponent.last, last & 1 == 1, exponent.count > 1 || last >= 3 else {
            throw Rejection("RSA public exponent must be odd and at least 3")
        }
        let modulusBytes = Array(modulus)
        if ROCAFingerprint.matches(modulus: modulusBytes) {
            throw Rejection("RSA modulus has the ROCA fingerprint (CVE-2017-15361): its private key can be computed")
        }
        guard let key = PreparedRSAKey(modulus: modulusBytes, exponent: Array(exponent)) else {
            throw Rejection("RSA key refused by the crypto library")
        }
        return .rsa(key)
    }

    private static func ecKey(_ jwk: [String: JSONValue]) throws(Rejection) -> (VerificationKey.Backing, Set<JWSAlgorithm>) {
        guard case .string(let curve)? = jwk["crv"] else { throw Rejection("crv is missing or not a string") }
        let size: Int
        switch curve {
        case "P-256": size = 32
        case "P-384": size = 48
        case "P-521": size = 66
        default: throw Rejection("unsupported EC crv \(quoted(curve))")
        }
        // The uncompressed SEC 1 form; swift-crypto checks the point is on the curve.
        let x = try coordinate("x", of: jwk, byteCount: size)
        let y = try coordinate("y", of: jwk, byteCount: size)
        let point = [0x04] + x + y
        switch curve {
        case "P-256":
            guard let key = try? P256.Signing.PublicKey(x963Representation: point) else { throw Rejection("point is not on P-256") }
            return (.p256(key), [.es256])
        case "P-384":
            guard let key = try? P384.Signing.PublicKey(x963Representation: point) else { throw Rejection("point is not on P-384") }
            return (.p384(key), [.es384])
        default:
            guard let key = try? P521.Signing.PublicKey(x963Representation: point) else { throw Rejection("point is not on P-521") }
            return (.p521(key), [.es512])
        }
    }

    private static func bytes(_ name: String, of jwk: [String: JSONValue]) throws(Rejection) -> [UInt8] {
        guard case .string(let text)? = jwk[name] else { throw Rejection("\(name) is missing or not a string") }
        guard let decoded = Base64URL.decode(text.utf8) else { throw Rejection("\(name) is not canonical base64url") }
        guard !decoded.isEmpty else { throw Rejection("\(name) is empty") }
        return decoded
    }

    /// A fixed-length coordinate: RFC 7518 §6.2.1.2 requires the full length, leading zeros included.
    private static func coordinate(_ name: String, of jwk: [String: JSONValue], byteCount: Int) throws(Rejection) -> [UInt8] {
        let decoded = try bytes(name, of: jwk)
        guard decoded.count == byteCount else { throw Rejection("\(name) is \(decoded.count) bytes; \(byteCount) expected") }
        return decoded
    }

    private static func describe(_ keyType: String, _ jwk: [String: JSONValue]) -> String {
        if let curve = jwk["crv"]?.stringValue { return "\(keyType) \(LogText.truncated(curve, maxBytes: 32))" }
        return keyType
    }

    private static func quoted(_ text: String) -> String {
        "\"\(LogText.truncated(text, maxBytes: 64))\""
    }
}
