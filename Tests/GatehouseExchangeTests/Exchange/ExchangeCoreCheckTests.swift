import Foundation
import NIOCore
import NIOHTTP1
import Testing
import GatehouseExchange
import GatehousePolicy
import GatehouseVocabulary

/// What the core decides for a Check (`via` set) that a door's request does not need: an allowance is counted as
/// forwarded when it is given (a door's request is counted once the upstream answers), and a decision still pending at
/// the caller's deadline is refused 503, its late decision ignored. `CheckDriver` only carries these out.
@Suite
struct ExchangeCoreCheckTests {
    static func checkCore() -> ExchangeStateMachine { ExchangeStateMachine(speaksGRPC: false, forwardsAtReadEnd: false, via: "ext_authz_grpc") }

    @Test func aChecksAllowanceIsCountedAsForwardedByTheCoreAndADoorsIsNot() throws {
        var testbed = CoreTestbed()
        let token = "t"
        var check = Self.checkCore()
        let allowed = testbed.run(&check, path: "/v1/orders", token: token)
        #expect(allowed.isForwarded && allowed.outcomes == [.forwarded], "\(allowed.action) \(allowed.records)")
        var door = ExchangeCoreTests.core()
        let forwarded = testbed.run(&door, path: "/v1/orders", token: token)
        #expect(forwarded.isForwarded && forwarded.outcomes.isEmpty, "\(forwarded.action) \(forwarded.records)")
    }

    @Test func aDecisionPendingAtTheCallersDeadlineIsRefused503AndItsLateDecisionIgnored() throws {
        let testbed = CoreTestbed()
        var core = Self.checkCore()
        #expect(core.callerDeadlinePassed().ignored == .noRequest, "no request: nothing to refuse")
        let head = HTTPRequestHead(
            version: .http2, method: .GET, uri: "/v1/orders", headers: ["host": "api.test", "authorization": "Bearer \("t")"])
        core.readBegan(now: testbed.now)
        let actions = [
            core.receivedHead(head, clientIP: "203.0.113.9", settings: testbed.settings, recent: nil, now: testbed.now), core.receivedEnd(),
        ]
        _ = core.takeRecords()
        let generation = try #require(actions.lazy.compactMap(\.decisionGeneration).first, "\(actions)")
        // The decision is not reported: it is still pending (a key refetch, an introspection call) at the deadline.
        guard case .send(let response) = core.callerDeadlinePassed() else {
            Issue.record("the caller's deadline is answered")
            return
        }
        #expect(response.status == .serviceUnavailable)
        #expect(core.takeRecords()?.rejection?.failure.reason == .keysUnavailable)
        #expect(core.decided(.admit(.anonymous), generation: generation, now: testbed.now, wallClock: 0).ignored == .lateReport, "too late")
        #expect(core.callerDeadlinePassed().ignored == .alreadyDecided, "answered once")
    }

    /// Gatehouse's own endpoints answer on the doors only: a Check for one is refused as an unknown path, before any
    /// token is looked at; the same path through a door is the endpoint.
    @Test func aCheckForAnOwnEndpointIsAnUnknownPath() throws {
        var testbed = CoreTestbed()
        for path in ["/.gatehouse/userinfo", "/.gatehouse/check", "/.gatehouse/jwks", "/.gatehouse/nothing"] {
            var check = Self.checkCore()
            let refused = testbed.run(&check, path: path, token: "t")
            #expect(refused.response?.status == .notFound && refused.outcomes == [.endpoint], "\(path): \(refused.action)")
            #expect(refused.response?.body == "{\"error\":\"not_found\"}", "\(path)")
        }
        var door = ExchangeCoreTests.core()
        let userinfo = testbed.run(&door, path: "/.gatehouse/userinfo", token: "t")
        #expect(userinfo.response?.status != .notFound, "a door's request is the endpoint: \(userinfo.action)")
    }
}
