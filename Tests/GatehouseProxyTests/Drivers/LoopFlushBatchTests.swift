import NIOEmbedded
import Testing
@testable import GatehouseProxy

/// The flushes of one event loop's tick wait for its end, then go out together, each asked-for one once, in order.
struct LoopFlushBatchTests {
    final class Recorder: DeferredFlush {
        let name: String
        var flushed: (String) -> Void = { _ in }
        init(_ name: String) { self.name = name }
        func flushDeferred() { flushed(name) }
    }

    @Test func flushesWaitForTheTicksEndThenGoOutInTheOrderAsked() {
        let loop = EmbeddedEventLoop()
        var flushed: [String] = []
        let first = Recorder("first"), second = Recorder("second")
        first.flushed = { flushed.append($0) }
        second.flushed = { flushed.append($0) }
        let batch = LoopFlushBatch.of(loop)
        batch.flushSoon(first)
        batch.flushSoon(second)
        #expect(flushed.isEmpty, "nothing goes out before the tick's tasks run")
        loop.run()
        #expect(flushed == ["first", "second"])
        loop.run()
        #expect(flushed == ["first", "second"], "each flush once")
    }

    /// A flush that asks for another (a write made while flushing) is done in the same tick, not lost.
    @Test func aFlushAskedForWhileFlushingIsNotLost() {
        let loop = EmbeddedEventLoop()
        var flushed: [String] = []
        let batch = LoopFlushBatch.of(loop)
        let late = Recorder("late")
        late.flushed = { flushed.append($0) }
        let early = Recorder("early")
        early.flushed = {
            flushed.append($0)
            batch.flushSoon(late)
        }
        batch.flushSoon(early)
        loop.run()
        #expect(flushed == ["early", "late"])
        batch.flushSoon(early)
        loop.run()
        #expect(flushed == ["early", "late", "early", "late"], "the batch is used again tick after tick")
    }

    /// A thread that ran one loop and then another (each test's embedded loop) flushes on the loop it is given.
    @Test func aThreadsNextLoopGetsItsOwnBatch() {
        let old = EmbeddedEventLoop(), new = EmbeddedEventLoop()
        #expect(LoopFlushBatch.of(old) === LoopFlushBatch.of(old))
        var flushed: [String] = []
        let connection = Recorder("connection")
        connection.flushed = { flushed.append($0) }
        LoopFlushBatch.of(new).flushSoon(connection)
        new.run()
        #expect(flushed == ["connection"])
    }
}
