/// The asymmetric JWS algorithms Gatehouse verifies (RFC 7518 §3, RFC 8037).
///
/// `none` and the HMAC family are deliberately absent: a sidecar holds only public keys,
/// so an HMAC "secret" could only ever be something an attacker also knows.
public enum JWSAlgorithm: String, Sendable, Hashable, CaseIterable {
    case rs256 = "RS256", rs384 = "RS384", rs512 = "RS512"
    case ps256 = "PS256", ps384 = "PS384", ps512 = "PS512"
    case es256 = "ES256", es384 = "ES384", es512 = "ES512"
    case edDSA = "EdDSA"
}
