package import NIOCore

/// A token bucket: `rate` calls a second, up to one second's worth at once.
package struct CallBudget: Sendable {
    package var budget: Double
    var refilled: NIODeadline

    package init(rate: Int, now: NIODeadline = .now()) {
        budget = Double(rate)
        refilled = now
    }

    /// One call from the budget, refilled for the time since the last refill.
    package mutating func take(perSecond rate: Int, now: NIODeadline = .now()) -> Bool {
        Self.take(budget: &budget, refilled: &refilled, perSecond: rate, now: now)
    }

    package static func take(budget: inout Double, refilled: inout NIODeadline, perSecond rate: Int, now: NIODeadline) -> Bool {
        let elapsed = Double((now - refilled).nanoseconds) / 1e9
        refilled = now
        budget = min(Double(rate), budget + elapsed * Double(rate))
        guard budget >= 1 else { return false }
        budget -= 1
        return true
    }
}
