import Foundation
@testable import Gatehouse
import NIOHTTP1
import Testing
import GatehouseSyntax
import GatehouseConfig
import GatehouseTelemetry

/// The everyday flows: a valid token is forwarded with identity headers, a bad one is answered
/// 401/403/503 in RFC 6750 form with exactly one failure-log line, and nothing reaches the upstream.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct AuthenticationTests {
    @Test(arguments: [TestSigner.rsa, TestSigner.ec, TestSigner.ed])
    func validTokenIsForwardedWithIdentityHeaders(signer: TestSigner) async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            let token = signer.token(claims: Claims.valid(extra: ["name": .string("Ada Lovelace")]))
            let response = try await env.request("/v1/orders", token: token)
            #expect(response.status == 200)
            let received = try #require(env.upstream.last)
            #expect(received.value("x-auth-subject") == "user-1")
            #expect(received.value("x-auth-email") == "ada@example.com")
            #expect(received.value("x-auth-email-verified") == "true")
            #expect(received.value("x-auth-name") == "Ada Lovelace")
            #expect(received.value("x-auth-provider") == "test")
            let claims = try #require(received.value("x-auth-claims"))
            let decoded = try #require(Base64URL.decode(Array(claims.utf8)))
            #expect(try StrictJSON.parse(decoded).objectValue?["sub"] == .string("user-1"))
            #expect(received.value("authorization") == "Bearer \(token)")
            #expect(env.failureLog.isEmpty)
        }
    }

    @Test func missingTokenGets401WithBearerChallengeAndNothingReachesUpstream() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            let response = try await env.request("/v1/orders")
            #expect(response.status == 401)
            #expect(response.headers.first(name: "www-authenticate") == "Bearer realm=\"gatehouse\"")
            #expect(response.headers.first(name: "content-type") == "application/json")
            let body = try #require(response.json)
            #expect(body["error"] == .string("invalid_request"))
            #expect(body["reason"] == .string("missing_token"))
            #expect(body["message"] != nil)
            #expect(body["request_id"]?.stringValue == response.headers.first(name: "x-request-id"))
            try await env.expectNothingReachedUpstream()
            let lines = env.failureLog
            #expect(lines.count == 1)
            #expect(lines.first?["reason"] == .string("missing_token"))
            #expect(lines.first?["status"] == .number("401"))
            #expect(lines.first?["path"] == .string("/v1/orders"))
        }
    }

    @Test func expiredTokenGets401WithReasonExpiredAndSubjectLogged() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            let token = TestSigner.rsa.token(claims: Claims.valid(lifetime: -3600))
            let response = try await env.request("/v1/orders?secret=1", token: token, headers: [("User-Agent", "MovieSwipe/1.4 iOS")])
            #expect(response.status == 401)
            let challenge = try #require(response.headers.first(name: "www-authenticate"))
            #expect(challenge.hasPrefix("Bearer realm=\"gatehouse\", error=\"invalid_token\", error_description=\""))
            #expect(response.json?["reason"] == .string("expired"))
            #expect(response.json?["message"] == .string("The access token expired."))
            let line = try #require(env.failureLog.first)
            #expect(line["event"] == .string("auth_failure"))
            #expect(line["sub"] == .string("user-1"))
            #expect(line["kid"] == .string("rsa-1"))
            #expect(line["alg"] == .string("RS256"))
            #expect(line["iss"] == .string(Claims.issuer))
            #expect(line["provider"] == .string("test"))
            #expect(line["user_agent"] == .string("MovieSwipe/1.4 iOS"))
            #expect(line["client_ip"] == .string("127.0.0.1"))
            #expect(line["path"] == .string("/v1/orders"))
            let fingerprint = try #require(line["token_fingerprint"]?.stringValue)
            #expect(fingerprint == FailureEvent.fingerprint(of: token[...]))
            #expect(fingerprint.count == "sha256:".count + 12)
            let raw = try #require(env.failureLogLines.first)
            #expect(!raw.contains(token))
            #expect(!raw.contains("secret=1"))
            try await env.expectNothingReachedUpstream()
        }
    }

    @Test func badSignatureIsNotAuthenticAndLogsNoSubject() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            let forged = TestSigner.otherRSA.with(keyID: "rsa-1").token(claims: Claims.valid())
            let response = try await env.request("/v1/orders", token: forged)
            #expect(response.status == 401)
            #expect(response.json?["reason"] == .string("bad_signature"))
            #expect(env.failureLog.count == 1)
            let line = try #require(env.failureLog.first)
            #expect(line["sub"] == nil, "no subject before a signature verified")
            #expect(line["token_fingerprint"]?.stringValue?.hasPrefix("sha256:") == true)
            #expect(!env.failureLogLines[0].contains(forged), "the token was logged")
        }
    }

    @Test func wrongAudienceAndUnknownIssuerAreRejected() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            let otherAudience = TestSigner.ec.token(claims: Claims.valid(extra: ["aud": .string("someone-else")]))
            #expect(try await env.request("/x", token: otherAudience).json?["reason"] == .string("wrong_audience"))
            let otherIssuer = TestSigner.ec.token(claims: Claims.valid(extra: ["iss": .string("https://evil.test")]))
            #expect(try await env.request("/x", token: otherIssuer).json?["reason"] == .string("unknown_issuer"))
            try await env.expectNothingReachedUpstream()
            #expect(env.failureLog.count == 2)
        }
    }

    @Test func audienceArrayContainingOursIsAccepted() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            let token = TestSigner.ec.token(claims: Claims.valid(extra: ["aud": .array([.string("x"), .string(Claims.audience)])]))
            #expect(try await env.request("/x", token: token).status == 200)
        }
    }

    @Test func optionalRouteForwardsGuestsAndStillRejectsBadTokens() async throws {
        try await TestEnvironment.run(configure: { configuration, _ in
            var route = RouteSettings(match: .prefix("/v1/events"))
            route.auth = .optional
            configuration.routes = [route]
        }) { (env: TestEnvironment) async throws in
            let guest = try await env.request("/v1/events", headers: [("X-Auth-Subject", "admin")])
            #expect(guest.status == 200)
            let received = try #require(env.upstream.last)
            #expect(received.value("x-auth-guest") == "true")
            #expect(received.value("x-auth-subject") == nil)
            let unknownIssuer = TestSigner.ec.token(claims: Claims.valid(extra: ["iss": .string("https://other.test")]))
            #expect(try await env.request("/v1/events", token: unknownIssuer).status == 401)
            let valid = try await env.request("/v1/events", token: TestSigner.ec.token(claims: Claims.valid()))
            #expect(valid.status == 200)
            #expect(env.upstream.last?.value("x-auth-guest") == nil)
            #expect(env.upstream.last?.value("x-auth-subject") == "user-1")
        }
    }

    @Test func routeRequirementsAnswer403() async throws {
        try await TestEnvironment.run(configure: { configuration, _ in
            var scoped = RouteSettings(match: .prefix("/v1/sync"))
            scoped.scopes = ["sync:write"]
            var grouped = RouteSettings(match: .prefix("/admin"))
            grouped.groups = ["admins"]
            configuration.routes = [scoped, grouped]
        }) { (env: TestEnvironment) async throws in
            let reader = TestSigner.ec.token(claims: Claims.valid(extra: ["scope": .string("sync:read")]))
            let scoped = try await env.request("/v1/sync", token: reader)
            #expect(scoped.status == 403)
            #expect(scoped.json?["reason"] == .string("insufficient_scope"))
            #expect(scoped.headers.first(name: "www-authenticate") == "Bearer realm=\"gatehouse\", error=\"insufficient_scope\", scope=\"sync:write\"")
            let grouped = try await env.request("/admin", token: reader)
            #expect(grouped.status == 403)
            #expect(grouped.json?["reason"] == .string("forbidden"))
            #expect(grouped.headers.first(name: "www-authenticate") == nil)
            let writer = TestSigner.ec.token(claims: Claims.valid(extra: ["scope": .string("sync:read sync:write")]))
            #expect(try await env.request("/v1/sync", token: writer).status == 200)
            #expect(env.failureLog.map { $0["status"] } == [.number("403"), .number("403")])
            #expect(env.upstream.requestCount == 1)
        }
    }

    @Test func routeProviderListExcludesOtherProviders() async throws {
        try await TestEnvironment.run(configure: { configuration, _ in
            var route = RouteSettings(match: .prefix("/v1/sync"))
            route.providers = ["someone-else"]
            var other = ProviderSettings(name: "someone-else", type: .jwks)
            other.issuer = "https://other.test"
            other.jwksURI = configuration.providers[0].jwksURI
            other.audiences = ["x"]
            configuration.providers.append(other)
            configuration.routes = [route]
        }) { (env: TestEnvironment) async throws in
            let response = try await env.request("/v1/sync", token: TestSigner.ec.token(claims: Claims.valid()))
            #expect(response.status == 401)
            #expect(response.json?["reason"] == .string("unknown_issuer"))
        }
    }

    @Test func keysUnavailableGets503WithRetryAfterAndReadyzIs503() async throws {
        try await TestEnvironment.run(waitForKeys: false, configure: { configuration, jwks in
            jwks.update { $0.status = .internalServerError }
        }) { (env: TestEnvironment) async throws in
            let response = try await env.request("/v1/orders", token: TestSigner.ec.token(claims: Claims.valid()))
            #expect(response.status == 503)
            #expect(response.headers.first(name: "retry-after") != nil)
            #expect(response.json?["reason"] == .string("keys_unavailable"))
            #expect(response.json?["message"] == .string("Authentication service temporarily unavailable. Please try again."))
            #expect(env.failureLog.first?["status"] == .number("503"))
            let readiness = try await env.admin("/readyz")
            #expect(readiness.status == 503)
            #expect(readiness.json?["unavailable"] == .array([.string("test")]))
            // The IdP comes back: no restart needed.
            env.jwks.update { $0.status = .ok }
            try await env.waitUntilReady()
            #expect(try await env.request("/v1/orders", token: TestSigner.ec.token(claims: Claims.valid())).status == 200)
            #expect(try await env.admin("/readyz").status == 200)
        }
    }

    @Test func rotatedKeyIsPickedUpWithinOneRequest() async throws {
        try await TestEnvironment.run(signers: [.rsa]) { (env: TestEnvironment) async throws in
            let rotated = TestSigner.ec.with(keyID: "ec-rotated")
            env.jwks.update { $0.body = TestSigner.jwks([.rsa, rotated]) }
            let response = try await env.request("/v1/orders", token: rotated.token(claims: Claims.valid()))
            #expect(response.status == 200)
            #expect(env.jwks.fetchCount == 2)
        }
    }

    @Test func unknownKidFloodCausesOneRefetchPerCooldown() async throws {
        try await TestEnvironment.run(signers: [.rsa]) { (env: TestEnvironment) async throws in
            let before = env.jwks.fetchCount
            try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<50 {
                    group.addTask {
                        let token = TestSigner.ec.with(keyID: "random-\(index)").token(claims: Claims.valid())
                        return try await env.request("/v1/orders", token: token).status
                    }
                }
                // 401 with the refetch's evidence, or 503 (retry) once the cooldown forbids another: never a second fetch.
                for try await status in group { #expect(status == 401 || status == 503) }
            }
            #expect(env.jwks.fetchCount - before == 1)
            #expect(env.failureLog.count == 50)
            #expect(env.failureLog.allSatisfy { $0["reason"] == .string("unknown_key") || $0["reason"] == .string("keys_unavailable") })
        }
    }

    @Test func cachedTokenIsServedWithoutReverification() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            let token = TestSigner.rsa.token(claims: Claims.valid())
            for _ in 0..<3 { #expect(try await env.request("/x", token: token).status == 200) }
            let metrics = try await env.admin("/metrics").body
            #expect(metrics.contains("gatehouse_verify_cache_total{result=\"hit\"} 2"))
            #expect(metrics.contains("gatehouse_verify_cache_total{result=\"miss\"} 1"))
        }
    }

    /// L02 through the running server: beyond `max_lines_per_second` lines are dropped and counted, and the
    /// server's own once-a-second flush writes the summary though no further failure comes to roll it over.
    @Test func aFloodBeyondTheRateLimitIsSummarizedByTheServersOwnFlush() async throws {
        try await TestEnvironment.run(configure: { configuration, _ in configuration.failureLog.maxLinesPerSecond = 3 }) {
            (env: TestEnvironment) async throws in
            let started = ContinuousClock.now
            for _ in 0..<20 { #expect(try await env.request("/v1/orders").status == 401) }
            let seconds = Int((ContinuousClock.now - started).components.seconds) + 2
            func suppressed() -> Int {
                env.failureLog.filter { $0["event"] == .string("auth_failure_suppressed") }
                    .compactMap { $0["count"]?.integerValue }.reduce(0) { $0 + Int($1) }
            }
            let logged = { env.failureLog.filter { $0["event"] == .string("auth_failure") }.count }
            for _ in 0..<300 where logged() + suppressed() < 20 { try await Task.sleep(for: .milliseconds(10)) }
            #expect(logged() + suppressed() == 20, "every failure is a line or counted in a summary: \(env.failureLogLines)")
            #expect(suppressed() > 0)
            #expect(logged() <= 3 * seconds, "\(logged()) lines in at most \(seconds) seconds")
            #expect(try await env.metric("gatehouse_auth_failures_total{reason=\"missing_token\",provider=\"\"}") == 20)
        }
    }
}
