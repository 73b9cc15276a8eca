package import Logging
import NIOConcurrencyHelpers
package import NIOCore

/// A fault that can repeat thousands of times a second (accept failing with EMFILE, a failure-log
/// write on a full disk): each occurrence is counted by the caller's metric, and the operational log
/// gets at most one line per `interval`, saying how many occurrences it stands for.
package final class RateLimitedReport: Sendable {
    private struct State {
        var lastLogged: NIODeadline?
        var unlogged = 0
    }

    private let interval: TimeAmount
    private let state = NIOLockedValueBox(State())

    package init(interval: TimeAmount = .seconds(10)) {
        self.interval = interval
    }

    /// Logs `message` (with `occurrences` in its metadata) unless a line went out within `interval`.
    package func occurred(_ message: Logger.Message, metadata: Logger.Metadata, to logger: Logger, now: NIODeadline = .now()) {
        let occurrences: Int? = state.withLockedValue { state in
            state.unlogged += 1
            if let last = state.lastLogged, now - last < interval { return nil }
            defer { (state.lastLogged, state.unlogged) = (now, 0) }
            return state.unlogged
        }
        guard let occurrences else { return }
        var metadata = metadata
        metadata["gatehouse.occurrences"] = "\(occurrences)"
        logger.error(message, metadata: metadata)
    }
}
