public import NIOCore

/// One timer for the deadlines of many (the streams of a connection): armed for the earliest deadline
/// it is told of, left alone for later ones, and re-armed by its owner when it fires for the earliest
/// still ahead. A request costs no timer scheduling or cancelling in the common case.
public struct WakeTimer {
    @inlinable public init() {}

    @usableFromInline var scheduled: Scheduled<Void>?
    @usableFromInline var firesAt: NIODeadline?

    /// `fire` runs with `owner` (if it is still there) on `eventLoop` at `deadline`, or earlier for an earlier
    /// deadline already set. `fire` captures nothing (`{ $0.timerFired() }`): a call that leaves the timer alone
    /// allocates nothing, where a closure capturing its owner would cost one allocation per call.
    @inlinable public mutating func wake<Owner: AnyObject>(at deadline: NIODeadline, on eventLoop: any EventLoop, owner: Owner, _ fire: @escaping (Owner) -> Void) {
        if let firesAt, firesAt <= deadline { return }
        scheduled?.cancel()
        firesAt = deadline
        scheduled = eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [weak owner] in
            if let owner { fire(owner) }
        }
    }

    /// Call first thing when it fires.
    @inlinable public mutating func fired() {
        scheduled = nil
        firesAt = nil
    }

    @inlinable public mutating func cancel() {
        scheduled?.cancel()
        fired()
    }
}
