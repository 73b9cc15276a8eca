/// A bounded map from tokens (or their digests) to what was learnt about them. When full, an insert evicts one entry,
/// chosen by the CLOCK rule: the entries sit on a ring in the order they came; a hit marks its
/// entry, and the hand passes over marked entries once (clearing the mark) and evicts the first
/// unmarked one. Tokens in use survive, and each insert frees at most one entry: no moment frees
/// thousands at once (a two-generation cache dropping a generation whole did, and a request that
/// paid for it waited milliseconds). Not synchronized: the owner holds its lock around every call.
/// Specialized here for the verified-token cache: the caches are in another module, where the generic code took the
/// runtime's metadata lookups and value witnesses for each copy of a key, 5 % of a new token's CPU time (issue 57).
package struct BoundedMap<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct Entry: Sendable {
        var value: Value
        /// Where the key sits on the ring.
        let slot: Int
    }

    private struct Slot: Sendable {
        var key: Key
        /// Looked up since the hand last passed: passed over once more.
        var used: Bool
    }

    private var entries: [Key: Entry] = [:]
    private var ring: [Slot] = []
    private var hand = 0
    private let capacity: Int

    /// At most `capacity` entries, at least 1.
    package init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    package var count: Int { entries.count }

    @_specialize(exported: true, where Key == TokenKey, Value == VerifiedIdentity)
    package mutating func value(for key: Key) -> Value? {
        guard let entry = entries[key] else { return nil }
        if !ring[entry.slot].used { ring[entry.slot].used = true }
        return entry.value
    }

    @_specialize(exported: true, where Key == TokenKey, Value == VerifiedIdentity)
    package mutating func insert(_ value: Value, for key: Key) {
        if let existing = entries[key] {
            entries[key] = Entry(value: value, slot: existing.slot)
            ring[existing.slot].used = true
            return
        }
        if ring.count < capacity {
            entries[key] = Entry(value: value, slot: ring.count)
            ring.append(Slot(key: key, used: false))
            return
        }
        while ring[hand].used {
            ring[hand].used = false
            hand = (hand + 1) % capacity
        }
        entries.removeValue(forKey: ring[hand].key)
        ring[hand] = Slot(key: key, used: false)
        entries[key] = Entry(value: value, slot: hand)
        hand = (hand + 1) % capacity
    }
}

/// The map the caches of tokens use: keyed by the token's bytes or its SHA-256.
package typealias BoundedTokenMap<Value: Sendable> = BoundedMap<TokenKey, Value>
