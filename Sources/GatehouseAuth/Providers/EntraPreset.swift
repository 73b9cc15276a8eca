import GatehouseSyntax
import GatehouseConfig
import GatehouseTokens
import GatehouseVocabulary

/// Entra's claim rule, at verification (the preset's issuers and tenants are configuration: `EntraPreset`).
extension EntraPreset {
    /// `tid` is a string, the `iss` is a template filled with that very `tid`, and the tenant is allowed.
    static func checkClaims(_ claims: [String: JSONValue], templates: [Template], tenants: Set<String>) throws(AuthFailure) {
        guard let tenant = claims["tid"]?.stringValue, !tenant.isEmpty else { throw AuthFailure(.invalidClaims, "tid is missing") }
        let issuer = claims["iss"]?.stringValue ?? ""
        guard templates.contains(where: { $0.tenant(in: issuer) == tenant[...] }) else {
            throw AuthFailure(.unknownIssuer, "iss is not the issuer of tenant \(LogText.truncated(tenant, maxBytes: 64)) (its tid)")
        }
        guard tenants.contains("*") || tenants.contains(tenant.lowercased()) else {
            throw AuthFailure(.unknownIssuer, "tenant \(LogText.truncated(tenant, maxBytes: 64)) is not allowed")
        }
    }
}
