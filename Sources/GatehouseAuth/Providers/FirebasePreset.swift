import Foundation
import GatehouseSyntax
import GatehouseTokens
import GatehouseVocabulary

/// Firebase Authentication ID tokens: issuer and audience are the project id from the
/// configuration (never the token's own `aud`), `sub` 1-128 characters, `auth_time` in the past.
enum FirebasePreset {
    static let jwksURL = URL(string: "https://www.googleapis.com/service_accounts/v1/jwk/securetoken@system.gserviceaccount.com")!  // safe: literal
    static let maxSubjectLength = 128
    /// Forwarded unless `[provider.headers]` says otherwise: how the user signed in (password, google.com, …).
    static func issuer(projectID: String) -> String { "https://securetoken.google.com/\(projectID)" }

    static func checkClaims(_ claims: [String: JSONValue], now: Int64, leeway: Int64) throws(AuthFailure) {
        guard let subject = try ClaimChecks.string("sub", in: claims, required: false), !subject.isEmpty,
            subject.count <= maxSubjectLength
        else {
            throw AuthFailure(.invalidClaims, "sub must be 1 to \(maxSubjectLength) characters")
        }
        guard let authTime = claims["auth_time"] else { throw AuthFailure(.invalidClaims, "auth_time is missing") }
        guard let seconds = authTime.integerValue, seconds >= 0, seconds <= now + leeway else {
            throw AuthFailure(.invalidClaims, "auth_time is not a past time")
        }
    }
}
