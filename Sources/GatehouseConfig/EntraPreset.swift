package import Foundation
import GatehouseSyntax

/// Microsoft Entra ID (v2.0 tokens; v1.0 `https://sts.windows.net/{tid}/` only with `accept_v1`), including
/// multi-tenant apps, whose tokens carry their tenant's own issuer. A token is accepted only when its `iss`
/// is the issuer template with **its own** `tid` put in, and that tenant is allowed: a token of one tenant
/// can never pass as another's, and a tenant not listed is refused even though Microsoft signed it.
package enum EntraPreset {
    package static let jwksURL = URL(string: "https://login.microsoftonline.com/common/discovery/v2.0/keys")!  // safe: literal
    static let placeholder = "{tenantid}"
    package static let v2Issuer = "https://login.microsoftonline.com/{tenantid}/v2.0"
    package static let v1Issuer = "https://sts.windows.net/{tenantid}/"
    /// Forwarded unless `[provider.headers]` says otherwise: the tenant and the user's object id.
    /// An issuer with `{tenantid}` in it: the text before and after.
    package struct Template: Sendable, Equatable {
        package let prefix: String
        package let suffix: String

        package init?(_ issuer: String) {
            guard let range = issuer.range(of: EntraPreset.placeholder) else { return nil }
            prefix = String(issuer[..<range.lowerBound])
            suffix = String(issuer[range.upperBound...])
        }

        /// The tenant part of an `iss` this template can have produced.
        package func tenant(in issuer: String) -> Substring? {
            guard issuer.utf8.count > prefix.utf8.count + suffix.utf8.count, issuer.hasPrefix(prefix), issuer.hasSuffix(suffix) else { return nil }
            let tenant = issuer.dropFirst(prefix.count).dropLast(suffix.count)
            return tenant.contains("/") ? nil : tenant
        }
    }

    /// A tenant id as Entra writes it: a GUID.
    static func isTenantID(_ text: String) -> Bool {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        return parts.map(\.count) == [8, 4, 4, 4, 12] && parts.allSatisfy { $0.allSatisfy(\.isHexDigit) }
    }
}
