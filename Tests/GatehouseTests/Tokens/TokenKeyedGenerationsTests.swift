@testable import Gatehouse
import Testing
import GatehouseTokens

struct TokenKeyedGenerationsTests {
    private func key(_ index: Int) -> TokenKey { TokenKey("token-\(index)"[...]) }

    @Test func neverHoldsMoreThanItsCapacity() {
        var cache = TokenKeyedGenerations<Int>(capacity: 100)
        for index in 0..<10_000 {
            cache.insert(index, for: key(index))
            #expect(cache.count <= 100)
        }
        #expect(cache.value(for: key(9_999)) == 9_999)
        #expect(cache.value(for: key(0)) == nil)
    }

    @Test func entriesInUseSurviveRotation() {
        var cache = TokenKeyedGenerations<Int>(capacity: 10)
        cache.insert(-1, for: key(-1))
        for index in 0..<100 {
            cache.insert(index, for: key(index))
            #expect(cache.value(for: key(-1)) == -1, "a token used between inserts must stay cached")
        }
    }

    @Test func keysCompareTheWholeTokenBytes() {
        #expect(TokenKey("abc"[...]) == TokenKey("abc"[...]))
        #expect(TokenKey("abc"[...]) != TokenKey("abd"[...]))
        // Same text, different Unicode spelling: different bytes, different tokens.
        #expect(TokenKey("\u{E9}"[...]) != TokenKey("e\u{301}"[...]))
        var cache = TokenKeyedGenerations<Int>(capacity: 4)
        cache.insert(1, for: TokenKey("abc"[...]))
        cache.insert(2, for: TokenKey("abc"[...]))
        #expect(cache.count == 1)
        #expect(cache.value(for: TokenKey("abc"[...])) == 2)
    }
}
