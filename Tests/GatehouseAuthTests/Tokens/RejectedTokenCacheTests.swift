import NIOCore
import Testing
@testable import GatehouseAuth
import GatehouseVocabulary
import GatehouseConfig
import GatehouseTokens


/// docs/security.md P47: the rejected-signature cache is bounded by `[verification] cache_size`.
struct RejectedTokenCacheTests {
    private func rejection() -> RejectedTokenCache.Rejection {
        .init(failure: AuthFailure(.badSignature, "signature does not verify"), provider: 0, keysFetchedAt: .now())
    }

    @Test func manyDistinctForgedTokensStayWithinTheDefaultBound() {
        let capacity = VerificationSettings().cacheSize
        #expect(capacity == 10_000)
        let cache = RejectedTokenCache(capacity: capacity)
        for index in 0..<(capacity * 3) {
            cache.insert(TokenKey("forged-\(index)"[...]), rejection())
            if index % 1000 == 0 { #expect(cache.count <= capacity) }
        }
        #expect(cache.count <= capacity)
        #expect(cache.lookup(TokenKey("forged-\(capacity * 3 - 1)"[...])) != nil, "the latest is remembered")
        #expect(cache.lookup(TokenKey("forged-0"[...])) == nil, "the oldest is forgotten")
    }

    @Test func aZeroSizeRemembersNothing() {
        let cache = RejectedTokenCache(capacity: 0)
        cache.insert(TokenKey("forged"[...]), rejection())
        #expect(cache.lookup(TokenKey("forged"[...])) == nil)
        #expect(cache.count == 0)
    }
}
