import Foundation
import GatehouseSyntax
import GatehouseTokens
import GatehouseVocabulary

/// What an RFC 7662 introspection response means (docs/reference.md §13). Only a 200 whose body is one
/// JSON object with `"active": true` (the boolean) is an active token; `"active": false` is an inactive
/// one (401); anything else is an issuer that did not answer usably (503: never taken for either).
enum IntrospectionAnswer {
    /// The largest answer read; a bigger one is an issuer that did not answer usably.
    static let maxBodyBytes = 64 << 10

    enum Outcome {
        case active([String: JSONValue])
        case inactive(AuthFailure)
        case unusable(String)
    }

    static func judge(status: UInt, body: [UInt8], provider: Provider, now: Int64, leeway: Int64) -> Outcome {
        guard status == 200 else { return .unusable("HTTP \(status)") }
        guard let value = try? StrictJSON.parse(body), case .object(var claims) = value else {
            return .unusable("the answer is not one JSON object")
        }
        switch claims["active"] {
        case .bool(true): break
        case .bool(false): return .inactive(AuthFailure(.tokenInactive, "the issuer says the token is not active"))
        case nil: return .unusable("the answer has no active member")
        default: return .unusable("active is not a boolean")
        }
        claims["active"] = nil
        do throws(AuthFailure) {
            try checkTimes(claims, now: now, leeway: leeway)
            if let type = claims["token_type"]?.stringValue, type.lowercased().replacingOccurrences(of: "-", with: "_") == "refresh_token" {
                throw AuthFailure(.wrongTokenType, "token_type refresh_token: a refresh token is not an access token")
            }
            if let issuer = provider.issuers.first, claims["iss"]?.stringValue != issuer {
                throw AuthFailure(.unknownIssuer, "iss \(LogText.truncated(claims["iss"]?.stringValue ?? "(none)", maxBytes: 128)) is not \(issuer)")
            }
            if !provider.audiences.isEmpty {
                let presented = (try? ClaimChecks.audiences(claims)) ?? []
                guard presented.contains(where: provider.audiences.contains) else {
                    throw AuthFailure(.wrongAudience, "aud is not accepted by provider \(provider.name)")
                }
            }
            _ = try ClaimChecks.string("sub", in: claims, required: false)
        } catch {
            var failure = error
            failure.subject = claims["sub"]?.stringValue  // the issuer vouched for the answer
            return .inactive(failure)
        }
        return .active(claims)
    }

    /// `exp`, `nbf`, `iat` are optional in an answer (RFC 7662 §2.2); when present they are checked as a JWT's.
    private static func checkTimes(_ claims: [String: JSONValue], now: Int64, leeway: Int64) throws(AuthFailure) {
        for name in ["exp", "nbf", "iat"] where claims[name] != nil {
            guard let value = claims[name]?.integerValue else { throw AuthFailure(.invalidClaims, "\(name) is not a whole number") }
            if name == "exp", value + max(0, leeway) <= now { throw AuthFailure(.expired, "exp is \(now - value)s in the past") }
            if name != "exp", value > now + max(0, leeway) { throw AuthFailure(.notYetValid, "\(name) is in the future") }
        }
    }
}
