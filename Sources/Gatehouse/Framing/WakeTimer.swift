import NIOCore

/// One timer for the deadlines of many (the streams of a connection): armed for the earliest deadline
/// it is told of, left alone for later ones, and re-armed by its owner when it fires for the earliest
/// still ahead. A request costs no timer scheduling or cancelling in the common case.
struct WakeTimer {
    private var scheduled: Scheduled<Void>?
    private var firesAt: NIODeadline?

    /// `fire` runs on `eventLoop` at `deadline`, or earlier for an earlier deadline already set.
    mutating func wake(at deadline: NIODeadline, on eventLoop: any EventLoop, _ fire: @escaping () -> Void) {
        if let firesAt, firesAt <= deadline { return }
        scheduled?.cancel()
        firesAt = deadline
        scheduled = eventLoop.assumeIsolated().scheduleTask(deadline: deadline, fire)
    }

    /// Call first thing when it fires.
    mutating func fired() {
        scheduled = nil
        firesAt = nil
    }

    mutating func cancel() {
        scheduled?.cancel()
        fired()
    }
}
