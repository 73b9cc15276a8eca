import Foundation
import GatehouseSyntax

/// Microsoft Entra ID (v2.0 tokens; v1.0 `https://sts.windows.net/{tid}/` only with `accept_v1`), including
/// multi-tenant apps, whose tokens carry their tenant's own issuer. A token is accepted only when its `iss`
/// is the issuer template with **its own** `tid` put in, and that tenant is allowed: a token of one tenant
/// can never pass as another's, and a tenant not listed is refused even though Microsoft signed it.
enum EntraPreset {
    static let jwksURL = URL(string: "https://login.microsoftonline.com/common/discovery/v2.0/keys")!  // safe: literal
    static let placeholder = "{tenantid}"
    static let v2Issuer = "https://login.microsoftonline.com/{tenantid}/v2.0"
    static let v1Issuer = "https://sts.windows.net/{tenantid}/"
    /// Forwarded unless `[provider.headers]` says otherwise: the tenant and the user's object id.
    static let defaultHeaders = [
        HeaderMapping(name: "X-Auth-Tenant-Id", claimPath: "tid"), HeaderMapping(name: "X-Auth-Object-Id", claimPath: "oid"),
    ]

    /// An issuer with `{tenantid}` in it: the text before and after.
    struct Template: Sendable, Equatable {
        let prefix: String
        let suffix: String

        init?(_ issuer: String) {
            guard let range = issuer.range(of: EntraPreset.placeholder) else { return nil }
            prefix = String(issuer[..<range.lowerBound])
            suffix = String(issuer[range.upperBound...])
        }

        /// The tenant part of an `iss` this template can have produced.
        func tenant(in issuer: String) -> Substring? {
            guard issuer.utf8.count > prefix.utf8.count + suffix.utf8.count, issuer.hasPrefix(prefix), issuer.hasSuffix(suffix) else { return nil }
            let tenant = issuer.dropFirst(prefix.count).dropLast(suffix.count)
            return tenant.contains("/") ? nil : tenant
        }
    }

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

    /// A tenant id as Entra writes it: a GUID.
    static func isTenantID(_ text: String) -> Bool {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        return parts.map(\.count) == [8, 4, 4, 4, 12] && parts.allSatisfy { $0.allSatisfy(\.isHexDigit) }
    }
}
