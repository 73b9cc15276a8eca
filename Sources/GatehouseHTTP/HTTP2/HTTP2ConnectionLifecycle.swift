public import NIOCore

/// When an HTTP/2 connection of Gatehouse's is wound down, as swift-nio-http2's server connection manager did:
/// - idle (no open stream) for `idleTimeout`, or asked to stop (a graceful stop of the listener): GOAWAY naming
///   no stream yet (2^31-1) and a PING; when the PING comes back, the GOAWAY that names the last stream taken, and
///   the connection closes once those are done;
/// - closed `drainTimeout` after the first GOAWAY at the latest, whether or not the peer answers the PING.
/// Time comes in, actions go out; the connection runs them and asks again at `nextDeadline`.
public struct HTTP2ConnectionLifecycle {
    public enum Action: Equatable {
        /// The first GOAWAY and its PING.
        case announceGoingAway
        /// The GOAWAY that names the last stream taken.
        case goAway
        case close
    }

    enum State {
        case open(idleSince: NIODeadline?)
        case announced(closeBy: NIODeadline)
        case goingAway(closeBy: NIODeadline)
    }

    private let idleTimeout: TimeAmount
    private let drainTimeout: TimeAmount
    private var state: State

    public init(idleTimeout: TimeAmount, drainTimeout: TimeAmount, now: NIODeadline) {
        self.idleTimeout = idleTimeout
        self.drainTimeout = drainTimeout
        state = .open(idleSince: now)
    }

    /// When to be asked again (`timePassed`).
    public var nextDeadline: NIODeadline? {
        switch state {
        case .open(let idleSince?): idleSince + idleTimeout
        case .open(nil): nil
        case .announced(let closeBy), .goingAway(let closeBy): closeBy
        }
    }

    /// The number of open streams changed; `now` is read only when the connection goes idle.
    public mutating func streamsChanged(open: Int, now: @autoclosure () -> NIODeadline) {
        guard case .open(let idleSince) = state else { return }
        if open > 0 {
            state = .open(idleSince: nil)
        } else if idleSince == nil {
            state = .open(idleSince: now())
        }
    }

    public mutating func timePassed(now: NIODeadline) -> Action? {
        switch state {
        case .open(let idleSince?) where idleSince + idleTimeout <= now:
            return stop(now: now)
        case .announced(let closeBy) where closeBy <= now, .goingAway(let closeBy) where closeBy <= now:
            return .close
        default:
            return nil
        }
    }

    /// Asked to stop (the listener's graceful stop).
    public mutating func stop(now: NIODeadline) -> Action? {
        guard case .open = state else { return nil }
        state = .announced(closeBy: now + drainTimeout)
        return .announceGoingAway
    }

    /// A PING acknowledgement came.
    public mutating func pingAcknowledged() -> Action? {
        guard case .announced(let closeBy) = state else { return nil }
        state = .goingAway(closeBy: closeBy)
        return .goAway
    }
}
