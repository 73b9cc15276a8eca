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
