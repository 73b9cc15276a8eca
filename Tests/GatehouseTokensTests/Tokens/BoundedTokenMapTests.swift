import Testing
import GatehouseTokens

struct BoundedTokenMapTests {
    private func key(_ index: Int) -> TokenKey { TokenKey("token-\(index)"[...]) }

    @Test func neverHoldsMoreThanItsCapacity() {
        var cache = BoundedTokenMap<Int>(capacity: 100)
        for index in 0..<10_000 {
            cache.insert(index, for: key(index))
            #expect(cache.count <= 100)
        }
        #expect(cache.value(for: key(9_999)) == 9_999)
        #expect(cache.value(for: key(0)) == nil)
    }

    @Test func entriesInUseSurviveRotation() {
        var cache = BoundedTokenMap<Int>(capacity: 10)
        cache.insert(-1, for: key(-1))
        for index in 0..<100 {
            cache.insert(index, for: key(index))
            #expect(cache.value(for: key(-1)) == -1, "a token used between inserts must stay cached")
        }
    }

    @Test func eachInsertIntoAFullMapEvictsOneEntryTheLeastRecentlyMarked() {
        var cache = BoundedTokenMap<Int>(capacity: 1_000)
        for index in 0..<1_000 { cache.insert(index, for: key(index)) }
        _ = cache.value(for: key(0))  // marked: passed over once
        for index in 1_000..<1_500 {
            cache.insert(index, for: key(index))
            // One entry out for each one in: no moment frees half the cache (or all of it) at once.
            #expect(cache.count == 1_000)
        }
        #expect(cache.value(for: key(0)) == 0, "a looked-up entry survives the hand's first pass")
        #expect(cache.value(for: key(1)) == nil && cache.value(for: key(500)) == nil, "the oldest unmarked entries went first")
        #expect(cache.value(for: key(501)) == 501 && cache.value(for: key(1_499)) == 1_499)
    }

    @Test func keysCompareTheWholeTokenBytes() {
        #expect(TokenKey("abc"[...]) == TokenKey("abc"[...]))
        #expect(TokenKey("abc"[...]) != TokenKey("abd"[...]))
        // Same text, different Unicode spelling: different bytes, different tokens.
        #expect(TokenKey("\u{E9}"[...]) != TokenKey("e\u{301}"[...]))
        var cache = BoundedTokenMap<Int>(capacity: 4)
        cache.insert(1, for: TokenKey("abc"[...]))
        cache.insert(2, for: TokenKey("abc"[...]))
        #expect(cache.count == 1)
        #expect(cache.value(for: TokenKey("abc"[...])) == 2)
    }
}

/// The map's table (open addressing, backward-shift deletion) against a plain model of the CLOCK rule, with keys made
/// to collide: every answer the same, through thousands of inserts, hits and evictions.
struct BoundedMapModelTests {
    /// Seven hashes for all keys: long runs in the index, every deletion shifting entries back.
    private struct CollidingKey: Hashable, Sendable {
        let id: Int
        func hash(into hasher: inout Hasher) { hasher.combine(id % 7) }
        static func == (lhs: Self, rhs: Self) -> Bool { lhs.id == rhs.id }
    }

    /// The CLOCK rule as the doc comment says it, searched linearly.
    private struct Model {
        var ring: [(key: Int, value: Int, used: Bool)] = []
        var hand = 0
        let capacity: Int

        mutating func value(for key: Int) -> Int? {
            guard let slot = ring.firstIndex(where: { $0.key == key }) else { return nil }
            ring[slot].used = true
            return ring[slot].value
        }

        mutating func insert(_ value: Int, for key: Int) {
            if let slot = ring.firstIndex(where: { $0.key == key }) {
                ring[slot].value = value
                ring[slot].used = true
            } else if ring.count < capacity {
                ring.append((key, value, false))
            } else {
                while ring[hand].used {
                    ring[hand].used = false
                    hand = (hand + 1) % capacity
                }
                ring[hand] = (key, value, false)
                hand = (hand + 1) % capacity
            }
        }
    }

    @Test(arguments: [1, 5, 40]) func answersAsTheModelDoes(capacity: Int) {
        var map = BoundedMap<CollidingKey, Int>(capacity: capacity)
        var model = Model(capacity: capacity)
        var random = SystemRandomNumberGenerator()
        for step in 0..<4_000 {
            let key = Int.random(in: 0..<(capacity * 3), using: &random)
            if Bool.random(using: &random) {
                map.insert(step, for: CollidingKey(id: key))
                model.insert(step, for: key)
            } else {
                #expect(map.value(for: CollidingKey(id: key)) == model.value(for: key), "step \(step), key \(key)")
            }
            #expect(map.count == model.ring.count)
        }
        // Every key the model holds is found, and no other; each lookup marks in both alike.
        for key in 0..<(capacity * 3) {
            #expect(map.value(for: CollidingKey(id: key)) == model.value(for: key), "key \(key)")
        }
    }
}
