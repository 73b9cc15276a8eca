import NIOCore

/// The connection's deadlines (next request head or sign-out body, a stalled request body, the
/// upstream's response head, then its next bytes) share one timer.
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
        case .awaitingHead, .core, .discarding:
            // The next head, a sign-out's body, or the last answer's reading (none while deciding).
            guard let deadline = headDeadline else { return }
            if deadline <= now { context.close(promise: nil) } else { armWatchdog(for: deadline, context: context) }
        case .forwarding(let exchange):
            // The client stopped sending its body although the upstream could take more.
            let bodyStalledAt = exchange.requestEnded ? nil : lastClientRead + services.idleTimeout
            if let bodyStalledAt, bodyStalledAt <= now, exchange.connection?.channel.isWritable == true {
                context.close(promise: nil)
                return
            }
            if let deadline = exchange.responseDeadline, deadline <= now {
                responseTimedOut(exchange)
                return
            }
            if let deadline = exchange.responseDeadline { armWatchdog(for: deadline, context: context) }
            // Past it but the upstream is full (our backpressure, not the client's stall): look again later.
            if let bodyStalledAt { armWatchdog(for: max(bodyStalledAt, now + .seconds(1)), context: context) }
        case .connecting, .upgrading, .tunnelling:
            break  // no deadline of this kind pending; setting the next one arms the timer again
        }
    }
}
