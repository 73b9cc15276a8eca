import Foundation
import GatehouseSyntax
import GatehouseTokens
import GatehouseVocabulary

/// Sign in with Apple: issuer appleid.apple.com, `aud` = the app's bundle or services ID.
/// Apple sends `email_verified` and `is_private_email` as the strings "true"/"false" (sometimes
/// as booleans): both are accepted and forwarded as booleans.
enum ApplePreset {
    static let issuer = "https://appleid.apple.com"
    static let jwksURL = URL(string: "https://appleid.apple.com/auth/keys")!  // safe: literal
    static let stringBooleans = ["email_verified", "is_private_email"]

    static func normalize(_ claims: [String: JSONValue]) throws(AuthFailure) -> [String: JSONValue] {
        var normalized = claims
        for name in stringBooleans {
            switch claims[name] {
            case nil, .bool?:
                continue
            case .string("true")?:
                normalized[name] = .bool(true)
            case .string("false")?:
                normalized[name] = .bool(false)
            default:
                throw AuthFailure(.invalidClaims, "\(name) is neither true nor false")
            }
        }
        return normalized
    }
}
