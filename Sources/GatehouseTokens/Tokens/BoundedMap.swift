/// A bounded map from tokens (or their digests) to what was learnt about them. When full, an insert evicts one entry,
/// chosen by the CLOCK rule: the entries sit on a ring in the order they came; a hit marks its
/// entry, and the hand passes over marked entries once (clearing the mark) and evicts the first
/// unmarked one. Tokens in use survive, and each insert frees at most one entry: no moment frees
/// thousands at once (a two-generation cache dropping a generation whole did, and a request that
/// paid for it waited milliseconds). Not synchronized: the owner holds its lock around every call.
///
/// One table, not a dictionary beside a ring (issue 57: a new token cost four dictionary probes, its key held twice,
/// and the evicted key hashed and compared byte by byte again): the ring holds each entry once with its key's hash,
/// and an open-addressed index (linear probing, deletion by backward shift) maps a hash to its ring slot. A probe
/// compares stored hashes first and a key only where they are equal; an eviction finds its index entry by slot
/// number, without touching the key. The index grows with the ring, kept at most half full.
/// Specialized here for the verified-token cache: the caches are in another module, where the generic code took the
/// runtime's metadata lookups and value witnesses for each copy of a key, 5 % of a new token's CPU time (issue 57).
package struct BoundedMap<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct Slot: Sendable {
        var key: Key
        var value: Value
        let hash: Int
        /// Looked up since the hand last passed: passed over once more.
        var used: Bool
    }

    /// The ring, in the order entries came until it is full; then the hand's slot is replaced.
    private var ring: [Slot] = []
    /// Ring slot + 1 at each position; 0 is empty. Its count is a power of two.
    private var index: [Int32] = Array(repeating: 0, count: 16)
    private var hand = 0
    private let capacity: Int

    /// At most `capacity` entries, at least 1 (and below 2^30: the index holds slot numbers in 32 bits).
    package init(capacity: Int) {
        self.capacity = min(max(1, capacity), 1 << 30)
    }

    package var count: Int { ring.count }

    @_specialize(exported: true, where Key == TokenKey, Value == VerifiedIdentity)
    package mutating func value(for key: Key) -> Value? {
        guard case .found(_, let slot) = find(key, hash: key.hashValue) else { return nil }
        if !ring[slot].used { ring[slot].used = true }
        return ring[slot].value
    }

    @_specialize(exported: true, where Key == TokenKey, Value == VerifiedIdentity)
    package mutating func insert(_ value: Value, for key: Key) {
        let hash = key.hashValue
        switch find(key, hash: hash) {
        case .found(_, let slot):
            ring[slot].value = value
            ring[slot].used = true
        case .empty(let position) where ring.count < capacity:
            ring.append(Slot(key: key, value: value, hash: hash, used: false))
            index[position] = Int32(ring.count)
            if ring.count * 2 > index.count { grow() }
        case .empty:
            while ring[hand].used {
                ring[hand].used = false
                hand = (hand + 1) % capacity
            }
            remove(slot: hand)
            ring[hand] = Slot(key: key, value: value, hash: hash, used: false)
            // The removal may have moved entries: the new key's position is looked for again.
            guard case .empty(let position) = find(key, hash: hash) else { return }
            index[position] = Int32(hand + 1)
            hand = (hand + 1) % capacity
        }
    }

    private enum Probe {
        /// The key's index position and ring slot.
        case found(position: Int, slot: Int)
        /// Not there: the empty position it would take.
        case empty(position: Int)
    }

    private func find(_ key: Key, hash: Int) -> Probe {
        let mask = index.count - 1
        var position = hash & mask
        while index[position] != 0 {
            let slot = Int(index[position]) - 1
            if ring[slot].hash == hash && ring[slot].key == key { return .found(position: position, slot: slot) }
            position = (position + 1) & mask
        }
        return .empty(position: position)
    }

    /// Takes `slot`'s entry out of the index (found by its stored hash and slot number; the key is not compared),
    /// shifting back the entries after it in its run so that every entry stays reachable from its home position.
    private mutating func remove(slot: Int) {
        let mask = index.count - 1
        var hole = ring[slot].hash & mask
        while Int(index[hole]) != slot + 1 { hole = (hole + 1) & mask }
        var next = hole
        while true {
            next = (next + 1) & mask
            guard index[next] != 0 else { break }
            let home = ring[Int(index[next]) - 1].hash & mask
            // The entry at `next` stays when its home lies cyclically in (hole, next].
            let stays = hole <= next ? (hole < home && home <= next) : (hole < home || home <= next)
            if stays { continue }
            index[hole] = index[next]
            hole = next
        }
        index[hole] = 0
    }

    /// Twice the positions, every entry placed again by its stored hash.
    private mutating func grow() {
        index = Array(repeating: 0, count: index.count * 2)
        let mask = index.count - 1
        for slot in ring.indices {
            var position = ring[slot].hash & mask
            while index[position] != 0 { position = (position + 1) & mask }
            index[position] = Int32(slot + 1)
        }
    }
}

/// The map the caches of tokens use: keyed by the token's bytes or its SHA-256.
package typealias BoundedTokenMap<Value: Sendable> = BoundedMap<TokenKey, Value>
