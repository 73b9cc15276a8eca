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
        batch.flushSoon(first, on: loop)
        batch.flushSoon(second, on: loop)
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
            batch.flushSoon(late, on: loop)
        }
        batch.flushSoon(early, on: loop)
        loop.run()
        #expect(flushed == ["early", "late"])
        batch.flushSoon(early, on: loop)
        loop.run()
        #expect(flushed == ["early", "late", "early", "late"], "the batch is used again tick after tick")
    }
}
