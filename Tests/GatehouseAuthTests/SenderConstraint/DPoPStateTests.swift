import Testing
@testable import GatehouseAuth

/// The DPoP state kept per replica: the replay cache of accepted proofs and the stateless nonces.
struct DPoPStateTests {
    @Test func aProofIsAcceptedOnceUntilItExpires() {
        let cache = DPoPReplayCache(capacity: 100)
        let key = DPoPReplayCache.Key(thumbprint: "key-a", identifier: "jti-1")
        #expect(cache.claim(key, expiresAt: 1_000, now: 900) == .fresh)
        #expect(cache.claim(key, expiresAt: 1_000, now: 950) == .replayed)
        // The same jti under another key is another proof: one client cannot use up another's ids.
        #expect(cache.claim(DPoPReplayCache.Key(thumbprint: "key-b", identifier: "jti-1"), expiresAt: 1_000, now: 950) == .fresh)
        #expect(cache.count == 2)
        // Past its expiry (rounded up to the cache's granularity) the entry is dropped whole.
        #expect(cache.claim(DPoPReplayCache.Key(thumbprint: "key-c", identifier: "x"), expiresAt: 2_000, now: 1_000 + DPoPReplayCache.granularity + 1)
            == .fresh)
        #expect(cache.count == 1)
    }

    @Test func aFullCacheRefusesRatherThanForgets() {
        let cache = DPoPReplayCache(capacity: 3)
        for index in 0..<3 {
            #expect(cache.claim(DPoPReplayCache.Key(thumbprint: "k", identifier: "\(index)"), expiresAt: 500, now: 100) == .fresh)
        }
        #expect(cache.claim(DPoPReplayCache.Key(thumbprint: "k", identifier: "3"), expiresAt: 500, now: 100) == .full)
        #expect(cache.claim(DPoPReplayCache.Key(thumbprint: "k", identifier: "0"), expiresAt: 500, now: 100) == .replayed)
        #expect(cache.claim(DPoPReplayCache.Key(thumbprint: "k", identifier: "3"), expiresAt: 900, now: 600) == .fresh)
    }

    @Test func keysAre32HexDigits() {
        let hex = DPoPReplayCache.Key(thumbprint: "k", identifier: "j").hex
        #expect(hex.count == 32 && hex.allSatisfy(\.isHexDigit))
    }

    @Test func aNonceIsGoodForItsLifetimeWithItsOwnSecretOnly() {
        let secret = Array("0123456789abcdef0123456789abcdef".utf8)
        let nonces = DPoPNonces(secret: secret, lifetime: 300)
        let nonce = nonces.issue(now: 1_000_000)
        #expect(nonces.isValid(nonce, now: 1_000_000))
        #expect(DPoPNonces(secret: secret, lifetime: 300).isValid(nonce, now: 1_000_299), "another replica with the secret")
        #expect(!nonces.isValid(nonce, now: 1_000_301), "expired")
        #expect(!nonces.isValid(nonce, now: 999_990), "issued in the future")
        #expect(!DPoPNonces(secret: Array("another secret, also 32 bytes...".utf8), lifetime: 300).isValid(nonce, now: 1_000_000))
        var tampered = Array(nonce.utf8)
        tampered[3] = tampered[3] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        #expect(!nonces.isValid(String(decoding: tampered, as: UTF8.self), now: 1_000_000))
        #expect(!nonces.isValid("", now: 1_000_000))
    }
}
