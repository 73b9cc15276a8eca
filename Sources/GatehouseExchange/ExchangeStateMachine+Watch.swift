package import NIOCore

/// The deadlines of a request: the core's rule, the driver's one timer. The response head must come within
/// `[upstream] timeout` (504 after); once it has, the response runs as long as bytes move either way and is cut after
/// `idle_timeout` without any (a zero-window stall, a dead peer); a request body that stops coming for `idle_timeout`
/// while the upstream could take more is cut too (slowloris), on every door, and so is a sign-out's body or an MCP message.
extension ExchangeStateMachine {
    package enum Watch: Equatable {
        /// No response head within `[upstream] timeout`: answer `upstreamFailed(.gatewayTimeout)`.
        case responseHeadLate
        /// Nothing moved for `idle_timeout`: give the exchange up (reset the stream, close the connection).
        case stalled
        /// A sign-out's body stopped coming for `idle_timeout` (slowloris): end the exchange incomplete.
        case bodyStopped
        /// Look again then.
        case ahead(NIODeadline)
        case nothing
    }

    /// What moved.
    package enum Progress {
        case responseBytes
        /// The upstream takes more of the request body again: the stall clock counts from when Gatehouse asks
        /// for more, not from its own pause.
        case upstreamTakesMore
    }

    /// `upstreamLegStarted(now:)`, then what the watchdog looks at next (`watch(now:legTakesMore: nil)`): one call on the
    /// core in place, where a driver's call of the non-mutating `watch` on its stored core copied the whole core first.
    package mutating func upstreamLegStartedWatch(now: NIODeadline) -> Watch {
        upstreamLegStarted(now: now)
        return watch(now: now, legTakesMore: nil)
    }

    /// What the watchdog finds at `now`. `legTakesMore`: whether the upstream leg takes more of the request body
    /// now (nil while it is opening).
    package func watch(now: NIODeadline, legTakesMore: Bool?) -> Watch {
        if case .readingSignOut(_, _, _, let bodyDeadline) = state { return bodyDeadline <= now ? .bodyStopped : .ahead(bodyDeadline) }
        if case .readingLogout(_, _, let bodyDeadline) = state { return bodyDeadline <= now ? .bodyStopped : .ahead(bodyDeadline) }
        if case .readingMessage(_, let bodyDeadline) = state { return bodyDeadline <= now ? .bodyStopped : .ahead(bodyDeadline) }
        guard let inHand, case .forwarding(let forwarding) = state else { return .nothing }
        let idleTimeout = inHand.settings.idleTimeout
        var next: NIODeadline?
        if !forwarding.responseStarted, let headDeadline = forwarding.responseDeadline {
            if headDeadline <= now { return .responseHeadLate }
            next = headDeadline
        }
        if forwarding.responseStarted {
            let idleAt = forwarding.lastProgress + idleTimeout
            if idleAt <= now { return .stalled }
            next = idleAt
        }
        if !requestEnded {
            let stalledAt = forwarding.lastRequestProgress + idleTimeout
            if stalledAt <= now && legTakesMore == true { return .stalled }
            // Past it but the upstream is full (Gatehouse's backpressure, not the client's stall): look again later.
            let lookAgain = max(stalledAt, now + .seconds(1))
            next = min(next ?? lookAgain, lookAgain)
        }
        return next.map { .ahead($0) } ?? .nothing
    }
}
