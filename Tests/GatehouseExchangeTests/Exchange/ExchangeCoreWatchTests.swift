import NIOCore
import NIOHTTP1
import Testing
@testable import GatehouseExchange
import GatehouseVocabulary
import GatehousePolicy

/// The core's deadlines and the actions no other core test reaches, on the fake clock (`CoreTestbed`): what `watch`
/// finds at each moment of a forwarded request, the cut once a response has begun, a decision that fails or comes
/// after the caller's deadline.
@Suite
struct ExchangeCoreWatchTests {
    static func core() -> ExchangeStateMachine { ExchangeStateMachine(speaksGRPC: false, forwardsAtReadEnd: false) }

    /// A whole GET with a token, read: the core waits for the decision it asked for, of the generation returned.
    static func awaitingDecision(_ core: inout ExchangeStateMachine, _ testbed: CoreTestbed) throws -> Int {
        core.readBegan(now: testbed.now)
        let head = HTTPRequestHead(
            version: .http1_1, method: .GET, uri: "/v1/orders", headers: HTTPHeaders([("host", "api.test"), ("authorization", "Bearer t")]))
        let decide = core.receivedHead(head, clientIP: "203.0.113.9", settings: testbed.settings, recent: nil, now: testbed.now)
        let generation = try #require(decide.decisionGeneration)
        _ = core.receivedEnd()
        _ = core.readEnded()
        return generation
    }

    /// No response head by `[upstream] timeout` after the first leg started: late, answered 504 as an upstream error.
    @Test func aResponseHeadNotInTimeIsLateAndAnsweredAsAGatewayTimeout() throws {
        var testbed = CoreTestbed()
        var core = Self.core()
        #expect(core.watch(now: testbed.now, legTakesMore: nil) == .nothing, "no request in hand")
        try #require(testbed.run(&core, path: "/v1/orders", token: "t").isForwarded)
        _ = core.takeRecords()
        let started = testbed.now
        let legDeadline = core.upstreamLegStarted(now: started)
        let headDeadline = try #require(legDeadline)
        #expect(headDeadline == started + testbed.settings.responseTimeout)
        #expect(core.watch(now: started, legTakesMore: true) == .ahead(headDeadline))
        #expect(core.watch(now: headDeadline - .nanoseconds(1), legTakesMore: true) == .ahead(headDeadline))
        #expect(core.watch(now: headDeadline, legTakesMore: true) == .responseHeadLate)
        guard case .send(let response) = core.upstreamFailed(.gatewayTimeout) else {
            Issue.record("a late head is answered")
            return
        }
        #expect(response.status == .gatewayTimeout)
        let taken = core.takeRecords()
        let records = try #require(taken)
        #expect(records.outcome?.outcome == .upstreamError && records.rejection == nil, "an upstream error, not a refusal")
    }

    /// Once the head has come the response runs as long as its bytes move: each movement pushes the stall back, and
    /// `idle_timeout` without one is a stall. A failure or a loss then is a cut: nothing can take the response's place.
    @Test func aStartedResponseRunsWhileBytesMoveAndIsCutWhenItStalls() throws {
        var testbed = CoreTestbed()
        let idle = testbed.settings.idleTimeout
        for ending in ["failed", "lost"] {
            var core = Self.core()
            try #require(testbed.run(&core, path: "/v1/stream", token: "t").isForwarded)
            let started = testbed.now
            core.upstreamLegStarted(now: started)
            let idleDeadline = core.upstreamResponseStarted(now: started)
        #expect(idleDeadline == started + idle)
            #expect(core.watch(now: started + idle - .nanoseconds(1), legTakesMore: nil) == .ahead(started + idle))
            let moved = started + idle - .seconds(1)
            core.progressed(.responseBytes, now: moved)
            #expect(core.watch(now: started + idle, legTakesMore: nil) == .ahead(moved + idle), "bytes moved: not stalled")
            #expect(core.watch(now: moved + idle, legTakesMore: nil) == .stalled)
            let action = ending == "failed" ? core.upstreamFailed(.badGateway) : core.upstreamLost(.failed, replayable: true)
            guard case .cut = action else {
                Issue.record("\(ending) mid-response: \(action)")
                continue
            }
            #expect(core.watch(now: moved + idle, legTakesMore: nil) == .nothing, "\(ending): the exchange is over")
        }
    }

    /// A request body that stops coming is a stall only while the upstream could take more: a full upstream is
    /// Gatehouse's own backpressure, looked at again a second later at the earliest.
    @Test func aRequestBodyThatStopsIsAStallOnlyWhenTheUpstreamTakesMore() throws {
        var testbed = CoreTestbed()
        let idle = testbed.settings.idleTimeout
        var core = Self.core()
        let outcome = testbed.run(&core, method: .POST, path: "/v1/upload", token: "t", body: ByteBuffer(string: "part"), ended: false)
        try #require(outcome.isForwarded, "\(outcome.action)")
        let started = testbed.now
        core.upstreamLegStarted(now: started)
        core.upstreamResponseStarted(now: started)  // an early answer: the body may still come
        let later = started + idle
        core.progressed(.responseBytes, now: later)  // the response is alive: only the request can stall
        #expect(core.watch(now: later, legTakesMore: true) == .stalled)
        #expect(core.watch(now: later, legTakesMore: false) == .ahead(later + .seconds(1)))
        core.progressed(.upstreamTakesMore, now: later)
        #expect(core.watch(now: later, legTakesMore: true) == .ahead(later + idle), "asked for more now: counted from here")
    }

    /// A decision that could not be made (a key refetch that failed) is a 503 `keys_unavailable`, logged as a refusal.
    @Test func aDecisionThatFailsIsA503KeysUnavailable() throws {
        var testbed = CoreTestbed()
        var core = Self.core()
        let generation = try Self.awaitingDecision(&core, testbed)
        testbed.now = testbed.now + .milliseconds(5)
        guard case .send(let response) = core.decisionFailed(generation: generation, now: testbed.now) else {
            Issue.record("a failed decision is answered")
            return
        }
        #expect(response.status == .serviceUnavailable && response.headers.first(name: "retry-after") != nil)
        let records = core.takeRecords()
        #expect(records?.rejection?.failure.reason == .keysUnavailable)
    }

    /// The Check's caller gives up at its deadline: a pending decision is refused 503 there and then, and the verdict
    /// that comes after is a late report, never an allowance.
    @Test func theCallersDeadlineRefusesAPendingDecisionAndItsVerdictIsThenIgnored() throws {
        let testbed = CoreTestbed()
        var core = ExchangeStateMachine(speaksGRPC: false, forwardsAtReadEnd: true)
        let withoutRequest = core.callerDeadlinePassed()
        #expect(withoutRequest.ignored == .noRequest)
        let generation = try Self.awaitingDecision(&core, testbed)
        guard case .send(let response) = core.callerDeadlinePassed() else {
            Issue.record("the caller's deadline answers")
            return
        }
        #expect(response.status == .serviceUnavailable)
        let records = core.takeRecords()
        #expect(records?.rejection?.failure.reason == .keysUnavailable)
        let late = core.decided(.admit(.verified(CoreTestbed.identity())), generation: generation, now: testbed.now, wallClock: 1_800_000_000)
        #expect(late.ignored == .lateReport, "\(late)")
        let again = core.callerDeadlinePassed()
        #expect(again.ignored == .alreadyDecided)
    }

    /// A 101 for a request that asked for no upgrade is the upstream's fault, not a tunnel.
    @Test func anUpgradeNobodyAskedForIsNoTunnel() throws {
        var testbed = CoreTestbed()
        var core = Self.core()
        try #require(testbed.run(&core, path: "/v1/orders", token: "t").isForwarded)
        core.upstreamLegStarted(now: testbed.now)
        let tunnel = core.upstreamSwitchedProtocols()
        #expect(!tunnel)
    }
}
