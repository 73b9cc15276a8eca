import Testing
import GatehouseHTTP

/// The block being decoded: its fields kept whole up to the header-list ceiling, an HPACK bomb refused at its end.
struct HTTP2DecodedBlockTests {
    private static func decode(_ block: inout HTTP2DecodedBlock, _ name: String, _ value: String) {
        Array(name.utf8).withUnsafeBytes { name in Array(value.utf8).withUnsafeBytes { block.decoded(name: name, value: $0) } }
    }

    @Test func aBlockIsHandedOnWholeInTheOrderItCame() throws {
        var block = HTTP2DecodedBlock(ceiling: 1000)
        block.begin()
        Self.decode(&block, ":method", "GET")
        Self.decode(&block, "x-a", "1")
        let fields = try block.end()
        #expect(fields.map(\.0) == [":method", "x-a"] && fields.map(\.1) == ["GET", "1"])
    }

    /// An HPACK bomb: nothing is kept past the ceiling (RFC 7541 §4.1 counts 32 bytes more a field), and the block
    /// is refused when it ends; the next block starts afresh.
    @Test func aBlockThatDecodesPastTheCeilingKeepsNothingMoreAndEndsTheConnection() throws {
        var block = HTTP2DecodedBlock(ceiling: 1000)
        block.begin()
        Self.decode(&block, "x-first", String(repeating: "a", count: 900))
        Self.decode(&block, "x-second", String(repeating: "b", count: 900))
        #expect(throws: HTTP2ConnectionError(code: HTTP2ConnectionError.compressionError, lastStream: nil)) { try block.end() }
        block.begin()
        Self.decode(&block, "x-again", String(repeating: "c", count: 100))
        #expect(try block.end().map(\.0) == ["x-again"])
    }

    /// A block abandoned before its end (its stream gone) leaves nothing for the next.
    @Test func aNewBlockDropsWhatWasLeft() throws {
        var block = HTTP2DecodedBlock(ceiling: 1000)
        block.begin()
        Self.decode(&block, "x-old", "1")
        block.begin()
        Self.decode(&block, "x-new", "2")
        #expect(try block.end().map(\.0) == ["x-new"])
    }
}
