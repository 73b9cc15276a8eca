import NIOConcurrencyHelpers

/// Tokens already verified, so a client repeating its token costs a dictionary lookup, not a
/// signature check. Bounded by `capacity`; an entry is never returned past the token's `exp`, and
/// the caller re-checks that the signing key is still published (a removed key's tokens fail).
final class VerifiedTokenCache: Sendable {
    private let capacity: Int
    private let entries: NIOLockedValueBox<[Substring: VerifiedIdentity]>

    init(capacity: Int) {
        self.capacity = capacity
        self.entries = NIOLockedValueBox([:])
    }

    func lookup(_ token: Substring, now: Int64) -> VerifiedIdentity? {
        guard let identity = entries.withLockedValue({ $0[token] }) else { return nil }
        return identity.expiry > now ? identity : nil
    }

    func insert(_ token: Substring, _ identity: VerifiedIdentity, now: Int64) {
        guard capacity > 0 else { return }
        // Own the token's bytes: the request buffer it points into is reused.
        let key = Substring(String(token))
        entries.withLockedValue { entries in
            if entries.count >= capacity { Self.evict(&entries, now: now, capacity: capacity) }
            entries[key] = identity
        }
    }

    func removeAll() {
        entries.withLockedValue { $0.removeAll(keepingCapacity: true) }
    }

    /// Drops expired entries; if that is not enough, drops an eighth of the rest (arbitrary ones:
    /// cheaper than LRU bookkeeping on every hit, and a dropped entry only costs one re-verification).
    private static func evict(_ entries: inout [Substring: VerifiedIdentity], now: Int64, capacity: Int) {
        entries = entries.filter { $0.value.expiry > now }
        guard entries.count >= capacity else { return }
        let excess = max(1, capacity / 8)
        for key in entries.keys.prefix(excess) { entries.removeValue(forKey: key) }
    }
}
