import NIOCore
import GatehouseHTTP

/// The connection's deadlines (the next request head, a closing connection's last answer taken, and its
/// current request's, which its driver keeps: a sign-out body, the upstream's response head, a stalled
/// body either way) share one timer.
/// Deadlines only move later as requests go by, so a pending timer is never too late: when it
/// fires it acts on a deadline that has passed, or re-arms itself for the one still ahead.
extension ClientConnectionHandler {
    func armWatchdog(for deadline: NIODeadline, context: ChannelHandlerContext) {
        watchdog.wake(at: deadline, on: context.eventLoop, owner: self) { $0.watchdogFired() }
    }

    func watchdogFired() {
        watchdog.fired()
        guard let context else { return }
        let now = NIODeadline.now()
        switch state {
        case .awaitingHead, .discarding:
            guard let deadline = headDeadline else { return }
            if deadline <= now { context.close(promise: nil) } else { armWatchdog(for: deadline, context: context) }
        case .exchanging(let driver):
            if let next = driver.deadlinePassed(now: now) { armWatchdog(for: next, context: context) }
        case .tunnelling:
            break
        }
    }
}
