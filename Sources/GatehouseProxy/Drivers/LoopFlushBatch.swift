import NIOCore
import NIOPosix

/// A connection whose flushes wait for the end of the event loop's tick (`LoopFlushBatch`).
protocol DeferredFlush: AnyObject {
    /// Flushes what was written since its flush was deferred.
    func flushDeferred()
}

/// The flushes of one event loop's tick, done together once every socket that was ready in it has been read: the
/// answers and the upstream requests of twenty connections ready at once go out as a burst, so a peer waiting in
/// epoll is woken once for them, not once for each (on a VM every wake-up of another CPU is an exit to the host).
/// One per event loop thread, which a connection looks up once (`of`) and keeps; the flush runs as the loop's task
/// after the tick's reads.
final class LoopFlushBatch {
    private let eventLoop: any EventLoop
    private var pending: [any DeferredFlush] = []
    private var isScheduled = false

    private init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    /// safe: each thread reads and sets only its own value.
    nonisolated(unsafe) private static let current = ThreadSpecificVariable<LoopFlushBatch>()

    /// The batch of `eventLoop`, the calling thread's. A thread that ran another loop before (an embedded loop of a
    /// test, one per test) gets a batch of its own for this one.
    static func of(_ eventLoop: any EventLoop) -> LoopFlushBatch {
        assert(eventLoop.inEventLoop, "a connection's flush is asked for on its own event loop")
        if let batch = current.currentValue, batch.eventLoop === eventLoop { return batch }
        let batch = LoopFlushBatch(eventLoop: eventLoop)
        current.currentValue = batch
        return batch
    }

    /// `connection`'s writes are flushed at the end of the tick (once: the connection asks once until then).
    func flushSoon(_ connection: any DeferredFlush) {
        pending.append(connection)
        guard !isScheduled else { return }
        isScheduled = true
        eventLoop.assumeIsolated().execute { self.run() }  // its own loop (asserted in `of`): the batch never leaves it
    }

    private func run() {
        isScheduled = false
        var index = 0
        while index < pending.count {
            pending[index].flushDeferred()
            index += 1
        }
        pending.removeAll(keepingCapacity: true)
    }
}
