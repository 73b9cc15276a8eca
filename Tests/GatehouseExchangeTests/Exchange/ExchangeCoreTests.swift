import Foundation
import NIOCore
import NIOHTTP1
import Testing
@testable import GatehouseExchange
import GatehouseVocabulary
import GatehouseTokens
import GatehousePolicy

/// The request core on its own (`ExchangeStateMachine`), built from plain values (`CoreTestbed`): no socket, no event
/// loop, no service, time from a fake clock, the gatekeeper's verdicts given. Every answer it gives is checked with what
/// it recorded for the driver to count and log (`ExchangeRecords`): the doors' table (FrontDoorTableTests) runs the same
/// requests through the real gatekeeper and real sockets.
@Suite
struct ExchangeCoreTests {
    static func core() -> ExchangeStateMachine { ExchangeStateMachine(speaksGRPC: false, forwardsAtReadEnd: false) }

    /// Each refusal: its status and reason, one rejection recorded (the failure-log line) with that reason and the
    /// request it refused, and no other outcome counted beside it.
    @Test func everyRefusalIsAnsweredAndRecordedOnce() {
        var testbed = CoreTestbed()
        let cases: [(reason: FailureReason, path: String, status: UInt)] = [
            (.missingToken, "/v1/orders", 401), (.malformedToken, "/v1/orders", 401), (.unsupportedAlgorithm, "/v1/orders", 401),
            (.unknownIssuer, "/v1/orders", 401), (.badSignature, "/v1/orders", 401), (.expired, "/v1/orders", 401),
            (.notYetValid, "/v1/orders", 401), (.wrongAudience, "/v1/orders", 401), (.invalidClaims, "/v1/orders", 401),
            (.insufficientScope, "/admin/x", 403), (.keysUnavailable, "/v1/orders", 503),
        ]
        for testCase in cases {
            let name = testCase.reason.rawValue
            var core = Self.core()
            let outcome = testbed.run(&core, path: testCase.path, token: "t", headers: [("x-request-id", name)]) { _ in
                .reject(AuthFailure(testCase.reason, "refused"))
            }
            #expect(outcome.status == testCase.status && outcome.reason == name, "\(name): \(outcome.action)")
            #expect(outcome.response?.headers.first(name: "retry-after") == (testCase.status == 503 ? "5" : nil), "\(name)")
            #expect(outcome.rejections.map(\.failure.reason) == [testCase.reason], "\(name): one line to log")
            #expect(outcome.rejections.first?.request.requestID == name)
            #expect(outcome.rejections.first?.request.clientIP == "203.0.113.9")
            #expect(outcome.rejections.first?.token == "t", "the token the line fingerprints")
            #expect(outcome.outcomes.isEmpty, "\(name): a refusal's outcome is counted with its line")
        }
    }

    /// A forward, a public route, an optional route without a token: handed to the upstream leg, nothing refused; the
    /// time to the decision is the fake clock's (no clock is read inside), and only for a route that authenticates.
    @Test func admittedRequestsAreForwardedWithTheirDecisionTime() throws {
        var testbed = CoreTestbed()
        var core = Self.core()
        let forwarded = testbed.run(&core, path: "/v1/orders", token: "t", decisionTakes: .milliseconds(7))
        #expect(forwarded.isForwarded, "\(forwarded.action)")
        #expect(forwarded.records.compactMap(\.authNanoseconds) == [TimeAmount.milliseconds(7).nanoseconds])
        #expect(forwarded.rejections.isEmpty && forwarded.outcomes.isEmpty, "counted when the upstream has answered")

        testbed.now = testbed.now + .milliseconds(13)
        _ = core.upstreamCompleted(now: testbed.now)
        let taken = core.takeRecords()
        let completed = try #require(taken)
        #expect(completed.upstreamNanoseconds == TimeAmount.milliseconds(20).nanoseconds, "from the head to the response's end")
        #expect(completed.outcome?.outcome == .forwarded && completed.outcome?.routeAuth == "required")
        let again = core.takeRecords()
        #expect(again == nil, "taken once")

        for path in ["/health", "/maybe/x"] {
            var open = Self.core()
            let outcome = testbed.run(&open, path: path, decisionTakes: .milliseconds(3))
            #expect(outcome.isForwarded, "\(path): \(outcome.action)")
            let durations = outcome.records.compactMap(\.authNanoseconds)
            #expect(durations == (path == "/health" ? [] : [TimeAmount.milliseconds(3).nanoseconds]), "\(path): \(durations)")
        }
    }

    /// Own endpoints are answered by the core, HEAD without a body; a target with no single reading is a 400 that
    /// closes the connection; each is counted once, nothing logged.
    @Test func ownEndpointsAndBadTargetsAreAnsweredHere() throws {
        var testbed = CoreTestbed()
        let token = "t"
        for (method, path) in [(HTTPMethod.GET, "/.gatehouse/userinfo"), (.HEAD, "/.gatehouse/userinfo"), (.GET, "/.gatehouse/check")] {
            var core = Self.core()
            let outcome = testbed.run(&core, method: method, path: path, token: token, headers: [("x-forwarded-uri", "/v1/orders")])
            #expect(outcome.status == 200, "\(method) \(path): \(outcome.action)")
            #expect(outcome.outcomes == [.endpoint] && outcome.rejections.isEmpty, "\(method) \(path)")
            #expect(core.inHand?.isHEAD == (method == .HEAD))
        }
        var check = Self.core()
        let allowed = testbed.run(&check, path: "/.gatehouse/check", token: token, headers: [("x-forwarded-uri", "/v1/orders")])
        #expect(allowed.response?.headers.first(name: "x-auth-subject") == "user-1", "the identity the check vouches for")

        var bad = Self.core()
        let refused = testbed.run(&bad, path: "/public/..;/admin", token: token)
        #expect(refused.status == 400 && refused.response?.closeConnection == true, "\(refused.action)")
        #expect(refused.outcomes == [.badRequest] && refused.rejections.isEmpty)

        var malformed = Self.core()
        let action = malformed.receivedMalformedHead("no :path")
        #expect(malformed.takeRecords()?.outcome?.outcome == .badRequest)
        if case .send(let response) = action { #expect(response.status == .badRequest) } else { Issue.record("\(action)") }
    }

    /// A sign-out reads its body (in the read of its head or after, `readBody`), hands the driver the identity and the
    /// body to sign out with, and answers what the driver reports for it (the store and the provider are the
    /// driver's: `SignOutTests` runs them); a report for another request is ignored, a body over the limit is a 413.
    @Test func aSignOutIsReadThenAnsweredWithWhatTheDriverReports() throws {
        var testbed = CoreTestbed()
        let form = [("content-type", "application/x-www-form-urlencoded")]
        var core = Self.core()
        let whole = testbed.run(&core, method: .POST, path: "/.gatehouse/signout", token: "t", headers: form,
                                body: ByteBuffer(string: "refresh_token=r1"))
        guard case .signOut(let endpoint, let identity, let request, let body, let generation) = whole.action else {
            Issue.record("a sign-out with its body: \(whole.action)")
            return
        }
        #expect(endpoint == .signout && identity.subject == "user-1" && request.presentedToken == "t")
        #expect(body == Array("refresh_token=r1".utf8))
        #expect(whole.outcomes == [.endpoint] && whole.rejections.isEmpty)
        #expect(core.answered(LocalResponse.json(.ok, "{}"), generation: generation - 1).ignored == .lateReport, "another request's report")
        guard case .send(let response) = core.answered(LocalResponse.json(.ok, "{}"), generation: generation) else {
            Issue.record("the driver's answer is sent")
            return
        }
        #expect(response.status == .ok)

        var streamed = Self.core()
        let reading = testbed.run(&streamed, method: .POST, path: "/.gatehouse/signout-everywhere", token: "t", headers: form, ended: false)
        guard case .readBody(let until) = reading.action else {
            Issue.record("the body is read: \(reading.action)")
            return
        }
        // The body must arrive within the time a head must (slowloris): the core says when to look, and what it finds.
        let idle = testbed.settings.idleTimeout
        #expect(until == testbed.now + idle)
        #expect(streamed.watch(now: testbed.now, legTakesMore: nil) == .ahead(testbed.now + idle))
        #expect(streamed.watch(now: testbed.now + idle, legTakesMore: nil) == .bodyStopped)
        #expect(streamed.isReadingBody)
        #expect(streamed.receivedBody(ByteBuffer(string: "a=b")).isNone)
        guard case .signOut(.signoutEverywhere, _, _, let read, _) = streamed.receivedEnd() else {
            Issue.record("signed out once the body ended")
            return
        }
        #expect(read == Array("a=b".utf8))

        var tooLarge = Self.core()
        _ = testbed.run(&tooLarge, method: .POST, path: "/.gatehouse/signout", token: "t", headers: form, ended: false)
        let action = tooLarge.receivedBody(ByteBuffer(repeating: UInt8(ascii: "a"), count: SignOutRequest.maxBodyBytes + 1))
        guard case .send(let refused) = action else {
            Issue.record("a body over the limit: \(action)")
            return
        }
        #expect(refused.status == .payloadTooLarge && refused.closeConnection)
    }

    /// The retry rule: an upstream leg lost before any answer is tried once more only with the whole request at hand,
    /// and when the upstream refused it (any method) or closed a reused connection on it (idempotent methods only);
    /// else 502, counted as an upstream error, never a refusal.
    @Test func anUpstreamLegLostIsRetriedOnlyWhenNothingCanHaveBeenDone() throws {
        var testbed = CoreTestbed()
        let token = "t"
        func admitted(_ method: HTTPMethod) -> ExchangeStateMachine {
            var core = Self.core()
            let outcome = testbed.run(&core, method: method, path: "/v1/retry", token: token)
            #expect(outcome.isForwarded, "\(method): \(outcome.action)")
            return core
        }
        func isRetry(_ action: ExchangeStateMachine.Action) -> Bool {
            if case .retry = action { return true }
            return false
        }
        func status(_ action: ExchangeStateMachine.Action) -> UInt? {
            if case .send(let response) = action { return response.status.code }
            return nil
        }
        for method in [HTTPMethod.GET, .HEAD, .PUT, .DELETE, .OPTIONS] {
            var core = admitted(method)
            #expect(isRetry(core.upstreamLost(.closedOnReuse, replayable: true)), "\(method) is retried")
            #expect(status(core.upstreamLost(.closedOnReuse, replayable: true)) == 502, "\(method) once only")
            #expect(core.takeRecords()?.outcome?.outcome == .upstreamError)
        }
        for method in [HTTPMethod.POST, .PATCH] {
            var core = admitted(method)
            #expect(status(core.upstreamLost(.closedOnReuse, replayable: true)) == 502, "\(method) is not retried on a reused connection")
            var refused = admitted(method)
            #expect(isRetry(refused.upstreamLost(.refused, replayable: true)), "a refused \(method) was never processed")
        }
        var processed = admitted(.GET)
        #expect(status(processed.upstreamLost(.failed, replayable: true)) == 502, "the upstream may have acted on it")
        var streamed = admitted(.PUT)
        #expect(status(streamed.upstreamLost(.refused, replayable: false)) == 502, "its body was streamed, not held")
        #expect(streamed.takeRecords()?.rejection == nil)
    }

    /// The response head's deadline is `[upstream] timeout` after the first leg started; a retry's leg keeps it (the
    /// client waits for one answer, not one per attempt: found while moving the rule into the core, the HTTP/2 driver
    /// gave a retry a whole new timeout); the next request on the connection gets its own.
    @Test func aRetryKeepsTheFirstLegsDeadline() throws {
        var testbed = CoreTestbed()
        var core = Self.core()
        let outcome = testbed.run(&core, path: "/v1/orders", token: "t")
        #expect(outcome.isForwarded, "\(outcome.action)")
        let started = testbed.now
        let first = core.upstreamLegStarted(now: started)
        #expect(first == started + testbed.settings.responseTimeout)
        #expect(core.upstreamLost(.closedOnReuse, replayable: true).isRetry)
        #expect(core.upstreamLegStarted(now: started + .seconds(3)) == first, "the retry keeps the first leg's deadline")
        core.reset()
        var next = core
        _ = testbed.run(&next, path: "/v1/orders", token: "t")
        #expect(next.upstreamLegStarted(now: started + .seconds(5)) == started + .seconds(5) + testbed.settings.responseTimeout)
    }
}
