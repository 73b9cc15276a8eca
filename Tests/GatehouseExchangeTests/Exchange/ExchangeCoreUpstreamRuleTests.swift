import Foundation
import NIOCore
import NIOHTTP1
import Testing
@testable import GatehouseExchange
import GatehouseVocabulary
import GatehousePolicy
import GatehouseTokens

/// The core's rules about what comes back from the upstream before its answer (`ExchangeStateMachine`): which client
/// gets an interim 1xx head, when a 101 makes a tunnel, and what a HEAD's refusal tells the door. No socket: the
/// requests are admitted or refused by the verdicts a gatekeeper gives (`CoreTestbed`), the upstream's heads are
/// the events.
@Suite
struct ExchangeCoreUpstreamRuleTests {
    /// An interim (1xx) head is relayed to an HTTP/1.1 client only: never to an HTTP/1.0 one, which would take it for
    /// the answer (RFC 9110 §15.2), nor on an HTTP/2 stream (head version 2.0); and not with no request in hand (before
    /// the first head, or once a keep-alive connection's core is reset for the next).
    @Test func interimHeadsAreRelayedToHTTP11ClientsOnly() throws {
        var testbed = CoreTestbed()
        let token = "t"
        let cases: [(name: String, version: HTTPVersion, core: ExchangeStateMachine, relays: Bool)] = [
            ("HTTP/1.1", .http1_1, ExchangeCoreTests.core(), true),
            ("HTTP/1.0", .http1_0, ExchangeCoreTests.core(), false),
            // As the HTTP/2 door makes it: its heads say 2.0.
            ("HTTP/2", .http2, ExchangeStateMachine(speaksGRPC: true, forwardsAtReadEnd: true), false),
        ]
        for testCase in cases {
            var core = testCase.core
            let outcome = testbed.run(&core, version: testCase.version, path: "/v1/orders", token: token)
            #expect(outcome.isForwarded, "\(testCase.name): \(outcome.action)")
            #expect(core.inHand?.head.version == testCase.version, "\(testCase.name)")
            #expect(core.relaysInformational == testCase.relays, "\(testCase.name)")
            core.reset()
            #expect(!core.relaysInformational, "\(testCase.name): no request in hand after a reset")
        }
        let fresh = ExchangeCoreTests.core()
        #expect(!fresh.relaysInformational, "no request in hand")
    }

    /// An upstream's 101 makes a tunnel only for the WebSocket upgrade the admitted request asked for (`Upgrade:
    /// websocket` and `Connection: upgrade` on a GET): then it is counted once as forwarded. An upgrade nobody asked for
    /// is no tunnel and counts nothing; the driver answers it `upstreamFailed(.badGateway)`: a 502, an upstream error.
    @Test func onlyAnUpgradeAskedForMakesATunnel() throws {
        var testbed = CoreTestbed()
        let token = "t"
        var empty = ExchangeCoreTests.core()
        let withoutRequest = empty.upstreamSwitchedProtocols()
        #expect(!withoutRequest, "no request in hand")

        var core = ExchangeCoreTests.core()
        let upgrade = testbed.run(&core, path: "/v1/ws", token: token, headers: [("upgrade", "websocket"), ("connection", "Upgrade")])
        #expect(upgrade.isForwarded, "\(upgrade.action)")
        #expect(upgrade.outcomes.isEmpty, "counted when the upstream has answered")
        let tunnels = core.upstreamSwitchedProtocols()
        #expect(tunnels, "the upgrade the request asked for")
        let taken = core.takeRecords()
        let recorded = try #require(taken)
        #expect(recorded.outcome?.outcome == .forwarded && recorded.outcome?.routeAuth == "required")
        #expect(recorded.rejection == nil)
        let again = core.takeRecords()
        #expect(again == nil, "counted once")

        let notAsked: [(name: String, method: HTTPMethod, headers: [(String, String)])] = [
            ("plain GET", .GET, []),
            ("no Connection: upgrade", .GET, [("upgrade", "websocket")]),
            ("another protocol", .GET, [("upgrade", "h2c"), ("connection", "Upgrade")]),
            ("not a GET", .POST, [("upgrade", "websocket"), ("connection", "Upgrade")]),
        ]
        for testCase in notAsked {
            var plain = ExchangeCoreTests.core()
            let forwarded = testbed.run(&plain, method: testCase.method, path: "/v1/orders", token: token, headers: testCase.headers)
            #expect(forwarded.isForwarded, "\(testCase.name): \(forwarded.action)")
            let switched = plain.upstreamSwitchedProtocols()
            #expect(!switched, "\(testCase.name): an upgrade nobody asked for")
            let nothing = plain.takeRecords()
            #expect(nothing == nil, "\(testCase.name): nothing counted as forwarded")
            let action = plain.upstreamFailed(.badGateway)
            if case .send(let response) = action {
                #expect(response.status == .badGateway, "\(testCase.name)")
            } else {
                Issue.record("\(testCase.name): \(action)")
            }
            let failed = plain.takeRecords()
            #expect(failed?.outcome?.outcome == .upstreamError, "\(testCase.name): an upstream error")
            #expect(failed?.rejection == nil, "\(testCase.name): not a refusal")
        }
    }

    /// A HEAD refused is answered with the refusal's status, recorded once, and the request in hand says HEAD, so the
    /// door writes the head alone (`StreamDriver.send`); the same refusal to a GET is not marked HEAD.
    @Test func aHEADRefusalIsAnsweredWithoutItsBody() throws {
        var testbed = CoreTestbed()
        let cases: [(path: String, token: String?, status: UInt, reason: FailureReason)] = [
            ("/v1/orders", nil, 401, .missingToken),
            ("/admin/x", "t", 403, .insufficientScope),
        ]
        for testCase in cases {
            for method in [HTTPMethod.HEAD, .GET] {
                var core = ExchangeCoreTests.core()
                let refused = testbed.run(&core, method: method, path: testCase.path, token: testCase.token) { _ in
                    .reject(AuthFailure(testCase.reason, "refused"))
                }
                #expect(refused.status == testCase.status && refused.reason == testCase.reason.rawValue, "\(method) \(testCase.path): \(refused.action)")
                #expect(refused.rejections.map(\.failure.reason) == [testCase.reason], "\(method) \(testCase.path): one line to log")
                #expect(core.inHand?.isHEAD == (method == .HEAD), "\(method) \(testCase.path)")
            }
        }
    }

    /// The upstream's deadlines are the core's (`watch(now:legTakesMore:)`), on a fake clock: the response head within
    /// `[upstream] timeout` (then 504); once the head is relayed, `idle_timeout` without a byte either way cuts the
    /// exchange; a request body that stops for `idle_timeout` is cut only while the upstream could take more of it
    /// (a full upstream is Gatehouse's backpressure, not the client's stall: looked at again a second later).
    @Test func theUpstreamsDeadlinesAreTheCores() throws {
        var testbed = CoreTestbed()
        let token = "t"
        let idle = testbed.settings.idleTimeout
        let timeout = testbed.settings.responseTimeout
        #expect(timeout < idle, "the defaults this test is written for")
        #expect(ExchangeCoreTests.core().watch(now: testbed.now, legTakesMore: true) == .nothing, "no request in hand")

        // A GET sent whole: only the head's deadline, then idle time.
        var get = ExchangeCoreTests.core()
        let forwarded = testbed.run(&get, path: "/v1/orders", token: token)
        #expect(forwarded.isForwarded, "\(forwarded.action)")
        let started = testbed.now
        get.readBegan(now: started)
        #expect(get.readEnded().isNone)
        get.upstreamLegStarted(now: started)
        #expect(get.watch(now: started, legTakesMore: true) == .ahead(started + timeout))
        #expect(get.watch(now: started + timeout, legTakesMore: true) == .responseHeadLate)
        get.upstreamResponseStarted(now: started + .seconds(1))
        #expect(get.watch(now: started + timeout, legTakesMore: true) == .ahead(started + .seconds(1) + idle),
                "a response that flows is bounded by idle time, not the timeout")
        get.progressed(.responseBytes, now: started + .seconds(2))
        #expect(get.watch(now: started + .seconds(1) + idle, legTakesMore: true) == .ahead(started + .seconds(2) + idle))
        #expect(get.watch(now: started + .seconds(2) + idle, legTakesMore: true) == .stalled)

        // A body still coming while the response flows (a streaming call): the client's stall is cut.
        var upload = ExchangeCoreTests.core()
        let streaming = testbed.run(
            &upload, method: .POST, path: "/v1/orders", token: token, headers: [("content-length", "100000")], ended: false)
        #expect(streaming.isForwarded, "\(streaming.action)")
        upload.readBegan(now: started)
        #expect(upload.readEnded().isNone)
        upload.upstreamLegStarted(now: started)
        upload.upstreamResponseStarted(now: started)
        upload.progressed(.responseBytes, now: started + idle - .seconds(1))
        let stalledAt = started + idle
        #expect(upload.watch(now: started, legTakesMore: true) == .ahead(stalledAt))
        #expect(upload.watch(now: stalledAt, legTakesMore: true) == .stalled)
        #expect(upload.watch(now: stalledAt, legTakesMore: false) == .ahead(stalledAt + .seconds(1)), "the upstream is full")
        #expect(upload.watch(now: stalledAt, legTakesMore: nil) == .ahead(stalledAt + .seconds(1)), "the leg is opening")
        upload.progressed(.upstreamTakesMore, now: stalledAt)
        #expect(upload.watch(now: stalledAt, legTakesMore: true) == .ahead(stalledAt + idle - .seconds(1)),
                "the stall clock restarts when the upstream takes more")
    }

    /// Once the upstream's response head went to the client, nothing can take its place: a loss or failure then is a
    /// cut (the stream or connection ends incomplete), never a retry or a 502, and counts nothing; no interim head nor
    /// 101 is taken after it. Before it, a retry goes as the admission the request was forwarded with.
    @Test func afterTheResponseHeadALossIsACutNeverAnAnswer() {
        var testbed = CoreTestbed()
        func forwarded() -> ExchangeStateMachine {
            var core = ExchangeCoreTests.core()
            let outcome = testbed.run(&core, path: "/v1/ws", token: "t", headers: [("upgrade", "websocket"), ("connection", "Upgrade")])
            #expect(outcome.isForwarded, "\(outcome.action)")
            core.upstreamLegStarted(now: testbed.now)
            return core
        }
        var before = forwarded()
        guard case .retry(.verified(let identity)) = before.upstreamLost(.refused, replayable: true) else {
            Issue.record("a refused stream is retried as the same admission")
            return
        }
        #expect(identity.subject == "user-1")

        for loss in [UpstreamLoss.refused, .closedOnReuse, .failed] {
            var core = forwarded()
            #expect(core.relaysInformational, "an interim head before the response's")
            core.upstreamResponseStarted(now: testbed.now)
            #expect(!core.relaysInformational, "no interim head after the response's")
            let switched = core.upstreamSwitchedProtocols()
            #expect(!switched, "no 101 after the response's head")
            guard case .cut = core.upstreamLost(loss, replayable: true) else {
                Issue.record("\(loss): a cut")
                continue
            }
            #expect(core.takeRecords() == nil, "\(loss): nothing counted")
            #expect(core.upstreamLost(loss, replayable: true).ignored == .alreadyDecided, "\(loss): cut once")
        }
        var failed = forwarded()
        failed.upstreamResponseStarted(now: testbed.now)
        guard case .cut = failed.upstreamFailed(.badGateway) else {
            Issue.record("an upstream failure after the head is a cut, not a 502")
            return
        }
    }
}
