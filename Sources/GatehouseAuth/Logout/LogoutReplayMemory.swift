import NIOConcurrencyHelpers

/// The logout tokens' `jti`s this replica has taken (`LogoutToken.replayKey`), each until it could no longer be taken
/// anyway. A shared store holds them too (`RevocationService.claimLogout`); this one answers a replay at the same replica
/// without a store round trip. Bounded: past `capacity` the expired go first, then the soonest to expire (forgetting one
/// lets a replay through, which revokes nothing new: `LogoutToken.revocation(now:)` is a function of the token).
package final class LogoutReplayMemory: Sendable {
    private let seen = NIOLockedValueBox<[String: Int64]>([:])
    package let capacity: Int

    init(capacity: Int = 100_000) {
        self.capacity = capacity
    }

    package func contains(_ key: String, now: Int64) -> Bool {
        seen.withLockedValue { ($0[key] ?? .min) >= now }
    }

    package func insert(_ key: String, until expiresAt: Int64, now: Int64) {
        seen.withLockedValue { seen in
            if seen.count >= capacity, seen[key] == nil {
                seen = seen.filter { $0.value >= now }
                if seen.count >= capacity, let soonest = seen.min(by: { $0.value < $1.value }) { seen[soonest.key] = nil }
            }
            seen[key] = max(seen[key] ?? .min, expiresAt)
        }
    }

    package func remove(_ key: String) {
        _ = seen.withLockedValue { $0.removeValue(forKey: key) }
    }
}
