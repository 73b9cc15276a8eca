import NIOCore

/// The connection's deadlines (next request head or sign-out body, whole upstream response) share one timer.
/// Deadlines only move later as requests go by, so a pending timer is never too late: when it
/// fires it acts on a deadline that has passed, or re-arms itself for the one still ahead.
extension ClientConnectionHandler {
    func armWatchdog(for deadline: NIODeadline, context: ChannelHandlerContext) {
        if let firesAt = watchdogFiresAt, firesAt <= deadline { return }
        watchdog?.cancel()
        watchdogFiresAt = deadline
        watchdog = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [weak self] in
            self?.watchdogFired()
        }
    }

    private func watchdogFired() {
        watchdog = nil
        watchdogFiresAt = nil
        guard let context else { return }
        let now = NIODeadline.now()
        switch state {
        case .awaitingHead, .readingSignOut:
            guard let deadline = headDeadline else { return }
            if deadline <= now { context.close(promise: nil) } else { armWatchdog(for: deadline, context: context) }
        case .forwarding(let exchange):
            guard let deadline = exchange.responseDeadline else { return }
            if deadline <= now { responseTimedOut(exchange) } else { armWatchdog(for: deadline, context: context) }
        case .deciding, .answering, .connecting, .discarding, .upgrading, .tunnelling:
            break  // no deadline of this kind pending; setting the next one arms the timer again
        }
    }
}
