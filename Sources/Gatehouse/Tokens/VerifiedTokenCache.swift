import NIOConcurrencyHelpers

/// Tokens already verified, so a client repeating its token costs a dictionary lookup, not a
/// signature check. Bounded by `capacity`; an entry is never returned past the token's `exp`, and
/// the caller re-checks that the signing key is still published (a removed key's tokens fail).
///
/// Keyed by the token's exact bytes (never a part of it: a reused signature with another payload
/// must miss), hashed and compared as bytes rather than as Unicode text.
final class VerifiedTokenCache: Sendable {
    struct Key: Hashable, Sendable {
        let bytes: [UInt8]

        init(_ token: Substring) { bytes = Array(token.utf8) }

        func hash(into hasher: inout Hasher) {
            bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
        }
    }

    private let capacity: Int
    private let entries: NIOLockedValueBox<[Key: VerifiedIdentity]>

    init(capacity: Int) {
        self.capacity = capacity
        self.entries = NIOLockedValueBox([:])
    }

    func lookup(_ token: Substring, now: Int64) -> VerifiedIdentity? {
        guard capacity > 0 else { return nil }
        let key = Key(token)
        guard let identity = entries.withLockedValue({ $0[key] }) else { return nil }
        return identity.expiry > now ? identity : nil
    }

    func insert(_ token: Substring, _ identity: VerifiedIdentity, now: Int64) {
        guard capacity > 0 else { return }
        let key = Key(token)
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
    private static func evict(_ entries: inout [Key: VerifiedIdentity], now: Int64, capacity: Int) {
        entries = entries.filter { $0.value.expiry > now }
        guard entries.count >= capacity else { return }
        let excess = max(1, capacity / 8)
        for key in Array(entries.keys.prefix(excess)) { entries.removeValue(forKey: key) }
    }
}
