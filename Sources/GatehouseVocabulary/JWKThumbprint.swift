import Crypto
package import GatehouseSyntax

/// The RFC 7638 SHA-256 thumbprint of a public JWK, base64url without padding: what a DPoP-bound
/// token's `cnf.jkt` names (RFC 9449 §6.1).
package enum JWKThumbprint {
    /// The members that identify each key type, in the order RFC 7638 §3.2 hashes them.
    private static let requiredMembers: [String: [String]] = [
        "EC": ["crv", "kty", "x", "y"],
        "RSA": ["e", "kty", "n"],
        "OKP": ["crv", "kty", "x"],
    ]

    /// nil when the JWK is not an object of a known key type with every required member a string.
    package static func sha256(of jwk: [String: JSONValue]) -> String? {
        guard let keyType = jwk["kty"]?.stringValue, let names = requiredMembers[keyType] else { return nil }
        var members: [String: JSONValue] = [:]
        for name in names {
            guard let value = jwk[name], value.stringValue != nil else { return nil }
            members[name] = value
        }
        // compactJSON sorts the members by their UTF-8 bytes and adds no whitespace: RFC 7638 §3.3's form.
        let canonical = JSONValue.object(members).compactJSON
        return Base64URL.encode(SHA256.hash(data: Array(canonical.utf8)))
    }
}
