import NIOConcurrencyHelpers
package import GatehouseTokens

/// Tokens already verified, so a client repeating its token costs a dictionary lookup, not a
/// signature check. Bounded by `capacity` (`BoundedTokenMap`); an entry is never returned
/// past the token's `exp`, and the caller re-checks that the key set it was verified against is
/// still the provider's current one (after a refresh it verifies again).
package final class VerifiedTokenCache: Sendable {
    private let capacity: Int
    private let entries: NIOLockedValueBox<BoundedTokenMap<VerifiedIdentity>>

    init(capacity: Int) {
        self.capacity = capacity
        self.entries = NIOLockedValueBox(BoundedTokenMap(capacity: capacity))
    }

    func lookup(_ key: TokenKey, now: Int64) -> VerifiedIdentity? {
        guard capacity > 0 else { return nil }
        guard let identity = entries.withLockedValue({ $0.value(for: key) }) else { return nil }
        return identity.expiry > now ? identity : nil
    }

    package func insert(_ key: TokenKey, _ identity: VerifiedIdentity) {
        guard capacity > 0 else { return }
        entries.withLockedValue { $0.insert(identity, for: key) }
    }
}
