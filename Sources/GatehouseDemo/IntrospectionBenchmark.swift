import Foundation
import GatehouseSyntax
import GatehouseTokens
import GatehouseAuth

/// The introspection cache's memory per entry (`gatehouse bench-verify --introspection-entries N`): N
/// active answers of a typical size (sub, scope, client_id, username, exp, iat, iss, token_type) cached
/// the way `Introspector` caches them (SHA-256 key, the claims, the encoded payload, the revocation key).
public enum IntrospectionBenchmark {
    public static func cacheFootprint(entries: Int) -> (entries: Int, residentBytes: Int) {
        var cache = BoundedTokenMap<VerifiedIdentity>(capacity: entries * 2)
        let before = ResidentMemory.bytes()
        let now = Int64(Date().timeIntervalSince1970)
        for index in 0..<entries {
            let token = "opaque-\(index)-" + String(repeating: "x", count: 32)
            let claims: [String: JSONValue] = [
                "sub": .string("user-\(index)"), "scope": .string("orders:read orders:write"), "client_id": .string("mobile-app"),
                "username": .string("user\(index)@example.com"), "exp": .number(String(now + 3600)), "iat": .number(String(now)),
                "iss": .string("https://auth.example.com"), "token_type": .string("Bearer"),
            ]
            let key = TokenKey.sha256(of: token[...])
            cache.insert(VerifiedIdentity(
                providerIndex: 0, providerName: "opaque", claims: claims,
                encodedPayload: Base64URL.encode(Array(JSONValue.object(claims).compactJSON.utf8)), keyID: nil, expiry: now + 3600,
                tokenDigest: key, keysFetchedAt: nil),
                for: key)
        }
        return (cache.count, ResidentMemory.bytes() - before)
    }
}
