import GatehouseSyntax
package import GatehouseVocabulary

/// A DPoP proof (RFC 9449 §4.2) whose own checks passed: a compact JWS of `typ` `dpop+jwt`, signed
/// with an asymmetric algorithm by the public key in its `jwk` header, carrying the claims a proof
/// must carry. What it proves about a request (`htm`, `htu`, `iat`, `ath`, nonce, replay) and whose
/// token it may present (`cnf.jkt`) is judged by `SenderConstraints`.
package struct DPoPProof: Sendable {
    /// RFC 7638 SHA-256 thumbprint of the `jwk` header: what a bound token's `cnf.jkt` must equal.
    package let thumbprint: String
    package let identifier: String
    package let method: String
    package let targetURI: String
    package let issuedAt: Int64
    package let accessTokenHash: String?
    package let nonce: String?

    /// The longest `jti` kept: RFC 9449 asks for 96 bits of randomness; a kilobyte of it is a flood, not an id.
    static let maxIdentifierBytes = 256

    /// RFC 9449 §4.3 checks 1–6 and the claims' types; every failure is `invalid_dpop_proof`.
    package static func verify(_ text: Substring, maxBytes: Int) throws(AuthFailure) -> DPoPProof {
        let jws: CompactJWS
        do {
            jws = try CompactJWS.parse(text, maxBytes: maxBytes)
        } catch {
            throw invalid("proof: " + error.detail)
        }
        guard let type = jws.header["typ"]?.stringValue, MediaTypeName.matches(type, "dpop+jwt") else {
            throw invalid("proof typ is not dpop+jwt")
        }
        guard let jwkValue = jws.header["jwk"], case .object(let jwk) = jwkValue else {
            throw invalid("proof has no jwk header object")
        }
        let key: VerificationKey
        switch JWKDecoder.decode(jwkValue, allowedAlgorithms: [jws.algorithm]) {
        case .key(let decoded): key = decoded
        case .skipped(let skipped): throw invalid("proof jwk refused: " + skipped.reason)
        }
        guard let thumbprint = JWKThumbprint.sha256(of: jwk) else { throw invalid("proof jwk has no thumbprint") }
        guard key.isValidSignature(jws.signature, for: jws.signingInput, algorithm: jws.algorithm) else {
            throw invalid("proof signature does not verify with its jwk")
        }
        let claims = jws.claimSet
        guard let identifier = claims["jti"]?.stringValue, !identifier.isEmpty, identifier.utf8.count <= maxIdentifierBytes else {
            throw invalid("proof jti missing, empty or longer than \(maxIdentifierBytes) bytes")
        }
        guard let method = claims["htm"]?.stringValue else { throw invalid("proof htm missing or not a string") }
        guard let targetURI = claims["htu"]?.stringValue else { throw invalid("proof htu missing or not a string") }
        guard let issuedAt = claims["iat"]?.integerValue else { throw invalid("proof iat missing or not an integer") }
        if let value = claims["ath"], value.stringValue == nil { throw invalid("proof ath is not a string") }
        if let value = claims["nonce"], value.stringValue == nil { throw invalid("proof nonce is not a string") }
        return DPoPProof(
            thumbprint: thumbprint, identifier: identifier, method: method, targetURI: targetURI, issuedAt: issuedAt,
            accessTokenHash: claims["ath"]?.stringValue, nonce: claims["nonce"]?.stringValue)
    }

    package static func invalid(_ detail: String) -> AuthFailure {
        AuthFailure(.invalidDPoPProof, detail)
    }
}

/// RFC 7515 §4.1.9's comparison of `typ` values: ASCII case-insensitive, `application/` optional.
package enum MediaTypeName {
    package static func matches(_ value: String, _ expected: String) -> Bool {
        var lowered = value.lowercased()
        if lowered.hasPrefix("application/") { lowered.removeFirst("application/".count) }
        return lowered == expected
    }
}
