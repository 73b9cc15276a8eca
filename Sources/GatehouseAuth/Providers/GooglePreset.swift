import Foundation
import GatehouseSyntax
import GatehouseTokens
import GatehouseVocabulary

/// Sign in with Google: ID tokens from accounts.google.com (both issuer spellings), keys at
/// googleapis.com, `aud` = an OAuth client ID, optional Workspace domain (`hd`) restriction.
enum GooglePreset {
    static let issuers = ["https://accounts.google.com", "accounts.google.com"]
    static let jwksURL = URL(string: "https://www.googleapis.com/oauth2/v3/certs")!  // safe: literal
    static let revocationEndpoint = URL(string: "https://oauth2.googleapis.com/revoke")!  // safe: literal

    /// With `hosted_domains`, only Workspace accounts of those domains (`hd` claim) are accepted.
    static func checkClaims(_ claims: [String: JSONValue], hostedDomains: Set<String>) throws(AuthFailure) {
        guard !hostedDomains.isEmpty else { return }
        let domain = try ClaimChecks.string("hd", in: claims, required: false)
        guard let domain, hostedDomains.contains(domain) else {
            throw AuthFailure(.invalidClaims, "hd \(domain ?? "(none)") is not an accepted hosted domain")
        }
    }
}
