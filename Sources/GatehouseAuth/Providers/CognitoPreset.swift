import Foundation
import GatehouseSyntax
import GatehouseConfig
import GatehouseTokens
import GatehouseVocabulary

/// Amazon Cognito user pools. Access tokens carry `client_id` and no `aud`; ID tokens carry `aud`;
/// `token_use` says which, and the provider's `token_use` setting says which it accepts.
/// `username` (access) / `cognito:username` (ID) is forwarded as `X-Auth-Username`.
enum CognitoPreset {
    static func issuer(region: String, userPoolID: String) -> String {
        "https://cognito-idp.\(region).amazonaws.com/\(userPoolID)"
    }

    static func jwksURL(issuer: String) -> URL? { URL(string: issuer + "/.well-known/jwks.json") }

    static func checkAudience(_ claims: some JSONMembers, clientIDs: Set<String>, accepted: ProviderSettings.TokenUse, provider: String)
        throws(AuthFailure)
    {
        let use = try ClaimChecks.string("token_use", in: claims, required: false)
        switch (accepted, use) {
        case (.access, "access"), (.any, "access"):
            let clientID = try ClaimChecks.string("client_id", in: claims, required: false)
            guard let clientID, clientIDs.contains(clientID) else {
                throw AuthFailure(.wrongAudience, "client_id \(clientID ?? "(none)") is not accepted by provider \(provider)")
            }
        case (.id, "id"), (.any, "id"):
            let presented = try ClaimChecks.audiences(claims)
            guard presented.contains(where: clientIDs.contains) else {
                throw AuthFailure(.wrongAudience, "aud is not one of provider \(provider)'s client_ids")
            }
        default:
            throw AuthFailure(.invalidClaims, "token_use \(use ?? "(none)") is not accepted (expected \(accepted.rawValue))")
        }
    }

    /// ID tokens name the user `cognito:username`, access tokens `username`: one name upstream.
    static func normalize(_ claims: [String: JSONValue]) -> [String: JSONValue] {
        guard claims["username"] == nil, let username = claims["cognito:username"] else { return claims }
        var normalized = claims
        normalized["username"] = username
        return normalized
    }
}
