import NIOCore
import Testing
import GatehouseHTTP
import GatehouseProxy

/// The body credits of an nghttp2 connection: each flush closes a batch, and a batch's credits are settled in the
/// order they were written, once and only once; what was written after a flush waits for the next.
struct HTTP2WriteLedgerTests {
    @Test func batchesSettleInOrderOnceEach() {
        let ledger = HTTP2WriteLedger()
        #expect(ledger.closeBatch() == nil, "no credit, no batch: a flush costs no promise")
        ledger.written(HTTP2WriteCredit(stream: 1, bytes: 10))
        ledger.written(HTTP2WriteCredit(stream: 3, bytes: 20))
        let first = ledger.closeBatch()
        #expect(first == 2)
        ledger.written(HTTP2WriteCredit(stream: 1, bytes: 30))
        let second = ledger.closeBatch()
        #expect(second == 1 && ledger.closeBatch() == nil)

        var settled: [(Int32, Int)] = []
        ledger.settle(first ?? 0) { settled.append(($0.stream, $0.bytes)) }
        #expect(settled.map(\.0) == [1, 3] && settled.map(\.1) == [10, 20], "the first batch, in order")
        ledger.settle(second ?? 0) { settled.append(($0.stream, $0.bytes)) }
        #expect(settled.map(\.1) == [10, 20, 30])
        ledger.settle(5) { settled.append(($0.stream, $0.bytes)) }
        #expect(settled.count == 3, "nothing is settled twice")
        #expect(ledger.marker.readableBytes == 0, "the batch's promise rides on an empty write")
    }
}
