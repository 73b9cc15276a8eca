import NIOCore
import Testing
@testable import GatehouseAuth
import GatehouseTokens

/// The call budget of `IssuerVerdicts`: a second's worth of calls, refilled at the rate.
struct IssuerVerdictsTests {
    @Test func theBudgetAllowsTheRatePerSecondAndRefillsWithTime() {
        let start = NIODeadline.uptimeNanoseconds(1_000_000_000)
        var state = IssuerVerdicts.State(cache: BoundedTokenMap(capacity: 10), budget: 3, refilled: start)
        func take(_ at: NIODeadline) -> Bool { state.takeFromBudget(perSecond: 3, now: at) }
        let first = [take(start), take(start), take(start), take(start)]
        #expect(first == [true, true, true, false], "three calls, then none in the same instant")
        #expect(!take(start + .milliseconds(200)), "0.6 of a call refilled")
        #expect(take(start + .milliseconds(400)), "1.2 refilled")
        // Never more than one second's worth, however long it was idle.
        let later = start + .seconds(60)
        let afterIdle = [take(later), take(later), take(later), take(later)]
        #expect(afterIdle == [true, true, true, false])
    }
}
