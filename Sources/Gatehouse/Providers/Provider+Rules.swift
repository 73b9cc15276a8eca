extension Provider {
    /// The audience check of this provider's type (INTERFACE.md §3, "audience check").
    func checkAudience(_ claims: [String: JSONValue]) throws(AuthFailure) {
        if type == .cognito {
            try checkCognitoAudience(claims)
            return
        }
        let presented = try ClaimChecks.audiences(claims)
        guard presented.contains(where: audiences.contains) else {
            throw AuthFailure(.wrongAudience, "aud \(Self.describe(presented)) is not accepted by provider \(name)")
        }
    }

    /// Checks particular to a preset, after signature, time and audience checks passed.
    func checkPresetRules(_ claims: [String: JSONValue], now: Int64, leeway: Int64) throws(AuthFailure) {
        switch type {
        case .google where !hostedDomains.isEmpty:
            let domain = try ClaimChecks.string("hd", in: claims, required: false)
            guard let domain, hostedDomains.contains(domain) else {
                throw AuthFailure(.invalidClaims, "hd \(domain ?? "(none)") is not an accepted hosted domain")
            }
        case .firebase:
            guard let subject = try ClaimChecks.string("sub", in: claims, required: false), !subject.isEmpty else {
                throw AuthFailure(.invalidClaims, "sub is missing or empty")
            }
            if let authTime = claims["auth_time"] {
                guard let seconds = authTime.integerValue, seconds <= now + leeway else {
                    throw AuthFailure(.invalidClaims, "auth_time is not a past time")
                }
            }
        default:
            break
        }
    }

    private func checkCognitoAudience(_ claims: [String: JSONValue]) throws(AuthFailure) {
        let use = try ClaimChecks.string("token_use", in: claims, required: false)
        switch (tokenUse, use) {
        case (.access, "access"), (.any, "access"):
            let clientID = try ClaimChecks.string("client_id", in: claims, required: false)
            guard let clientID, audiences.contains(clientID) else {
                throw AuthFailure(.wrongAudience, "client_id \(clientID ?? "(none)") is not accepted by provider \(name)")
            }
        case (.id, "id"), (.any, "id"):
            let presented = try ClaimChecks.audiences(claims)
            guard presented.contains(where: audiences.contains) else {
                throw AuthFailure(.wrongAudience, "aud \(Self.describe(presented)) is not accepted by provider \(name)")
            }
        default:
            throw AuthFailure(.invalidClaims, "token_use \(use ?? "(none)") is not accepted (expected \(tokenUse.rawValue))")
        }
    }

    private static func describe(_ audiences: [String]) -> String {
        audiences.count == 1 ? audiences[0] : "[" + audiences.joined(separator: ",") + "]"
    }
}
