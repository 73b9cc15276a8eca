import Crypto
import Foundation
@testable import Gatehouse
import NIOCore
import NIOHTTP1
import Testing
import GatehouseSyntax

/// The request core on its own (`ExchangeStateMachine`): no socket, no event loop of its own, time from a fake
/// clock. Every answer it gives is checked with what it recorded for the driver to count and log (`ExchangeRecords`):
/// the doors' table (FrontDoorTableTests) runs the same requests through real sockets.
@Suite(.serialized)
struct ExchangeCoreTests {
    static func core() -> ExchangeStateMachine { ExchangeStateMachine(speaksGRPC: false, forwardsAtReadEnd: false) }

    static func withTestbed(_ body: (CoreTestbed) async throws -> Void) async throws {
        let testbed = try await CoreTestbed()
        do {
            try await body(testbed)
        } catch {
            await testbed.close()
            throw error
        }
        await testbed.close()
    }

    /// Each refusal: its status and reason, one rejection recorded (the failure-log line) with that reason and the
    /// request it refused, and no other outcome counted beside it.
    @Test func everyRefusalIsAnsweredAndRecordedOnce() async throws {
        try await Self.withTestbed { testbed in
            let now = Int64(Date().timeIntervalSince1970)
            let unsigned = TokenFixtures.segment(#"{"alg":"none","typ":"JWT"}"#) + "." + TokenFixtures.segment(#"{"sub":"x"}"#) + "."
            let cases: [(name: String, path: String, token: String?, status: UInt, reason: String)] = [
                ("missing", "/v1/orders", nil, 401, "missing_token"),
                ("malformed", "/v1/orders", "not-a-jwt", 401, "malformed_token"),
                ("unsupported", "/v1/orders", unsigned, 401, "unsupported_algorithm"),
                ("issuer", "/v1/orders", try testbed.token(["iss": .string("https://evil.test")]), 401, "unknown_issuer"),
                ("signature", "/v1/orders", try testbed.token(key: P256.Signing.PrivateKey()), 401, "bad_signature"),
                ("expired", "/v1/orders", try testbed.token(["iat": .number(String(now - 7200)), "exp": .number(String(now - 3600))]), 401, "expired"),
                ("nbf", "/v1/orders", try testbed.token(["nbf": .number(String(now + 3600))]), 401, "not_yet_valid"),
                ("audience", "/v1/orders", try testbed.token(["aud": .string("other-api")]), 401, "wrong_audience"),
                ("claims", "/v1/orders", try testbed.token(["exp": .string("tomorrow")]), 401, "invalid_claims"),
                ("scope", "/admin/x", try testbed.token(), 403, "insufficient_scope"),
            ]
            for testCase in cases {
                var core = Self.core()
                let outcome = try await testbed.run(&core, path: testCase.path, token: testCase.token, headers: [("x-request-id", testCase.name)])
                #expect(outcome.status == testCase.status && outcome.reason == testCase.reason, "\(testCase.name): \(outcome.action)")
                #expect(outcome.rejections.map(\.failure.reason.rawValue) == [testCase.reason], "\(testCase.name): one line to log")
                #expect(outcome.rejections.first?.request.requestID == testCase.name)
                #expect(outcome.rejections.first?.request.clientIP == "203.0.113.9")
                #expect(outcome.outcomes.isEmpty, "\(testCase.name): a refusal's outcome is counted with its line")
            }
        }
    }

    /// A forward, a public route, an optional route without a token: handed to the upstream leg, nothing refused; the
    /// time to the decision is the fake clock's (no clock is read inside), and only for a route that authenticates.
    @Test func admittedRequestsAreForwardedWithTheirDecisionTime() async throws {
        try await Self.withTestbed { testbed in
            var core = Self.core()
            let forwarded = try await testbed.run(&core, path: "/v1/orders", token: try testbed.token(), decisionTakes: .milliseconds(7))
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
                let outcome = try await testbed.run(&open, path: path, decisionTakes: .milliseconds(3))
                #expect(outcome.isForwarded, "\(path): \(outcome.action)")
                let durations = outcome.records.compactMap(\.authNanoseconds)
                #expect(durations == (path == "/health" ? [] : [TimeAmount.milliseconds(3).nanoseconds]), "\(path): \(durations)")
            }
        }
    }

    /// Own endpoints are answered by the core, HEAD without a body; a target with no single reading is a 400 that
    /// closes the connection; each is counted once, nothing logged.
    @Test func ownEndpointsAndBadTargetsAreAnsweredHere() async throws {
        try await Self.withTestbed { testbed in
            let token = try testbed.token()
            for (method, path) in [(HTTPMethod.GET, "/.gatehouse/userinfo"), (.HEAD, "/.gatehouse/userinfo"), (.GET, "/.gatehouse/check")] {
                var core = Self.core()
                let outcome = try await testbed.run(&core, method: method, path: path, token: token, headers: [("x-forwarded-uri", "/v1/orders")])
                #expect(outcome.status == 200, "\(method) \(path): \(outcome.action)")
                #expect(outcome.outcomes == [.endpoint] && outcome.rejections.isEmpty, "\(method) \(path)")
                #expect(core.inHand?.isHEAD == (method == .HEAD))
            }
            var check = Self.core()
            let allowed = try await testbed.run(&check, path: "/.gatehouse/check", token: token, headers: [("x-forwarded-uri", "/v1/orders")])
            #expect(allowed.response?.headers.first(name: "x-auth-subject") == "user-1", "the identity the check vouches for")

            var bad = Self.core()
            let refused = try await testbed.run(&bad, path: "/public/..;/admin", token: token)
            #expect(refused.status == 400 && refused.response?.closeConnection == true, "\(refused.action)")
            #expect(refused.outcomes == [.badRequest] && refused.rejections.isEmpty)

            var malformed = Self.core()
            let action = malformed.receivedMalformedHead("no :path")
            #expect(malformed.takeRecords()?.outcome?.outcome == .badRequest)
            if case .send(let response) = action { #expect(response.status == .badRequest) } else { Issue.record("\(action)") }
        }
    }

    /// A sign-out reads its body, then answers once the revocation is stored; the token is refused afterwards.
    @Test func aSignOutRevokesTheToken() async throws {
        try await Self.withTestbed { testbed in
            let token = try testbed.token(["jti": .string("core-sign-out")])
            var core = Self.core()
            let signedOut = try await testbed.run(&core, method: .POST, path: "/.gatehouse/signout", token: token,
                                                  headers: [("content-type", "application/x-www-form-urlencoded")])
            #expect(signedOut.status == 200, "\(signedOut.action)")
            var after = Self.core()
            let refused = try await testbed.run(&after, path: "/v1/orders", token: token)
            #expect(refused.status == 401 && refused.reason == "revoked", "\(refused.action)")
        }
    }

    /// The retry rule: an upstream leg lost before any answer is tried once more only with the whole request at hand,
    /// and when the upstream refused it (any method) or closed a reused connection on it (idempotent methods only);
    /// else 502, counted as an upstream error, never a refusal.
    @Test func anUpstreamLegLostIsRetriedOnlyWhenNothingCanHaveBeenDone() async throws {
        try await Self.withTestbed { testbed in
            let token = try testbed.token()
            func admitted(_ method: HTTPMethod) async throws -> ExchangeStateMachine {
                var core = Self.core()
                let outcome = try await testbed.run(&core, method: method, path: "/v1/retry", token: token)
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
                var core = try await admitted(method)
                #expect(isRetry(core.upstreamLost(.closedOnReuse, replayable: true)), "\(method) is retried")
                #expect(status(core.upstreamLost(.closedOnReuse, replayable: true)) == 502, "\(method) once only")
                #expect(core.takeRecords()?.outcome?.outcome == .upstreamError)
            }
            for method in [HTTPMethod.POST, .PATCH] {
                var core = try await admitted(method)
                #expect(status(core.upstreamLost(.closedOnReuse, replayable: true)) == 502, "\(method) is not retried on a reused connection")
                var refused = try await admitted(method)
                #expect(isRetry(refused.upstreamLost(.refused, replayable: true)), "a refused \(method) was never processed")
            }
            var processed = try await admitted(.GET)
            #expect(status(processed.upstreamLost(.failed, replayable: true)) == 502, "the upstream may have acted on it")
            var streamed = try await admitted(.PUT)
            #expect(status(streamed.upstreamLost(.refused, replayable: false)) == 502, "its body was streamed, not held")
            #expect(streamed.takeRecords()?.rejection == nil)
        }
    }

    /// The response head's deadline is `[upstream] timeout` after the first leg started; a retry's leg keeps it (the
    /// client waits for one answer, not one per attempt: found while moving the rule into the core, the HTTP/2 driver
    /// gave a retry a whole new timeout); the next request on the connection gets its own.
    @Test func aRetryKeepsTheFirstLegsDeadline() async throws {
        try await Self.withTestbed { testbed in
            var core = Self.core()
            let outcome = try await testbed.run(&core, path: "/v1/orders", token: try testbed.token())
            #expect(outcome.isForwarded, "\(outcome.action)")
            let started = testbed.now
            let first = core.upstreamLegStarted(now: started)
            #expect(first == started + testbed.services.responseTimeout)
            #expect(core.upstreamLost(.closedOnReuse, replayable: true).isRetry)
            #expect(core.upstreamLegStarted(now: started + .seconds(3)) == first, "the retry keeps the first leg's deadline")
            core.reset()
            var next = core
            _ = try await testbed.run(&next, path: "/v1/orders", token: try testbed.token())
            #expect(next.upstreamLegStarted(now: started + .seconds(5)) == started + .seconds(5) + testbed.services.responseTimeout)
        }
    }
}
