import GatehouseSyntax
import GatehouseConfig
import GatehouseTokens
import GatehouseVocabulary

extension Provider {
    /// RFC 9068 §4: with `token_typ`, the JWS header's `typ` must be one of the listed types, compared as
    /// RFC 7515 §4.1.9 says. An OpenID ID token (`typ` `JWT` or none) presented where an access token is
    /// required is the confusion this names.
    func checkTokenType(_ header: [String: JSONValue]) throws(AuthFailure) {
        guard let tokenTypes else { return }
        guard let type = header["typ"]?.stringValue else {
            throw AuthFailure(.wrongTokenType, "no typ; provider \(name) takes \(tokenTypes.joined(separator: ", ")) only (an ID token?)")
        }
        guard tokenTypes.contains(where: { MediaTypeName.matches(type, $0) }) else {
            let shown = LogText.truncated(type, maxBytes: 64)
            throw AuthFailure(.wrongTokenType, "typ \(shown) is not \(tokenTypes.joined(separator: " or ")) (an ID token where an access token is required?)")
        }
    }

    /// The audience check of this provider's type (docs/reference.md §3, "audience check").
    func checkAudience(_ claims: some JSONMembers) throws(AuthFailure) {
        if type == .cognito {
            try CognitoPreset.checkAudience(claims, clientIDs: audiences, accepted: tokenUse, provider: name)
            return
        }
        // The usual one audience, checked without making the list the message below needs.
        if case .string(let audience)? = claims["aud"], audiences.contains(audience) { return }
        let presented = try ClaimChecks.audiences(claims)
        guard presented.contains(where: audiences.contains) else {
            let shown = presented.count == 1 ? presented[0] : "[" + presented.joined(separator: ",") + "]"
            throw AuthFailure(.wrongAudience, "aud \(shown) is not accepted by provider \(name)")
        }
    }

    /// The preset's own checks, after signature, time and audience; returns the claims as they are
    /// presented upstream and to route requirements (Apple's string booleans as booleans, …): a preset's as a
    /// dictionary (made to check them), a plain provider's as signed, each made when first read.
    func checkPresetRules(_ claims: LazyJSONObject, now: Int64, leeway: Int64) throws(AuthFailure) -> PresentedClaims {
        switch type {
        case .google:
            let members = claims.dictionary
            try GooglePreset.checkClaims(members, hostedDomains: hostedDomains)
            return .members(members)
        case .apple:
            return .members(try ApplePreset.normalize(claims.dictionary))
        case .firebase:
            let members = claims.dictionary
            try FirebasePreset.checkClaims(members, now: now, leeway: leeway)
            return .members(members)
        case .cognito:
            return .members(CognitoPreset.normalize(claims.dictionary))
        case .entra:
            let members = claims.dictionary
            try EntraPreset.checkClaims(members, templates: issuerTemplates, tenants: tenants)
            return .members(members)
        case .kubernetes:
            return .members(try KubernetesPreset.normalize(claims.dictionary))
        case .oidc, .jwks, .introspection:
            return .asSigned
        }
    }
}
