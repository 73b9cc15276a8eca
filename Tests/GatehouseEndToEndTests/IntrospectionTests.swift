import Foundation
@testable import Gatehouse
import NIOCore
import NIOHTTP1
import Testing
import GatehouseSyntax
import GatehouseConfig
@testable import GatehouseAuth

/// Opaque access tokens judged by the issuer (RFC 7662), end to end: against Authlib's introspection
/// endpoint (client authentication both ways, RFC 8414 discovery), and against a scripted IdP for the
/// faults and the cache rules that were other gateways' holes (a cached answer reused for a route that
/// needs another scope; a revoked token served from cache; a flood of random tokens reaching the IdP).
@Suite(.serialized, .timeLimit(.minutes(3)))
struct IntrospectionTests {
    static func opaqueProvider(_ configure: @escaping (inout ProviderSettings) -> Void) -> (inout Configuration, TestJWKSServer) -> Void {
        { configuration, _ in
            var provider = ProviderSettings(name: "opaque", type: .introspection)
            provider.introspection.clientID = TestAuthlibServer.clientID
            provider.introspection.clientSecret = .inline(TestAuthlibServer.clientSecret)
            configure(&provider)
            configuration.providers.append(provider)
            var read = RouteSettings(match: .prefix("/read"))
            read.scopes = ["read"]
            var write = RouteSettings(match: .prefix("/write"))
            write.scopes = ["write"]
            var jwtOnly = RouteSettings(match: .prefix("/jwt-only"))
            jwtOnly.providers = ["test"]
            configuration.routes = [read, write, jwtOnly]
        }
    }

    static func record(_ token: String, sub: String = "ada", scope: String = "read", lifetime: Int64 = 600) -> [String: JSONValue] {
        ["token": .string(token), "sub": .string(sub), "scope": .string(scope),
         "exp": .number(String(Int64(Date().timeIntervalSince1970) + lifetime))]
    }

    @Test(arguments: [IntrospectionSettings.ClientAuth.basic, .post])
    func authlibJudgesOpaqueTokensWithClientAuthentication(_ auth: IntrospectionSettings.ClientAuth) async throws {
        try await TestAuthlibServer.with(tokens: [Self.record("opaque-ada-1")],
                                         authMethod: auth == .basic ? "client_secret_basic" : "client_secret_post") { idp in
            try await TestEnvironment.run(configure: Self.opaqueProvider { provider in
                provider.introspection.endpoint = URL(string: idp.base + "/introspect")!
                provider.introspection.clientAuth = auth
            }) { (env: TestEnvironment) async throws in
                let valid = try await env.request("/read/x", token: "opaque-ada-1")
                #expect(valid.status == 200, "\(valid)")
                let received = try #require(env.upstream.last)
                #expect(received.value("x-auth-subject") == "ada")
                #expect(received.value("x-auth-provider") == "opaque")
                let claims = try #require(received.value("x-auth-claims").flatMap { Base64URL.decode(Array($0.utf8)) })
                #expect(try StrictJSON.parse(claims).objectValue?["scope"] == .string("read"))
                #expect(try StrictJSON.parse(claims).objectValue?["active"] == nil)
                let unknown = try await env.request("/read/x", token: "opaque-nobody")
                #expect(unknown.status == 401)
                #expect(unknown.json?["reason"] == .string("token_inactive"))
                let line = try #require(env.failureLog.last)
                #expect(line["provider"] == .string("opaque") && line["reason"] == .string("token_inactive"))
                #expect(!env.failureLogLines.joined().contains("opaque-nobody"), "never the token itself")
                // A JWT still goes to its JWT provider; an opaque token on a route of JWT providers only is not sent anywhere.
                #expect(try await env.request("/read/x", token: TestSigner.ec.token(claims: Claims.valid(extra: ["scope": .string("read")]))).status
                    == 200)
                #expect(try await env.request("/jwt-only/x", token: "opaque-ada-1").json?["reason"] == .string("malformed_token"))
            }
        }
    }

    @Test func theEndpointIsDiscoveredFromTheIssuersMetadata() async throws {
        try await TestAuthlibServer.with(tokens: [Self.record("opaque-ada-2")]) { idp in
            try await TestEnvironment.run(configure: Self.opaqueProvider { provider in
                provider.issuer = idp.base
            }) { (env: TestEnvironment) async throws in
                #expect(try await env.request("/read/x", token: "opaque-ada-2").status == 200)
                #expect(try await env.request("/read/x", token: "opaque-other").json?["reason"] == .string("token_inactive"))
            }
        }
    }

    /// The Oathkeeper hole (GHSA-vfvf-6gx5-mqv6): the cache holds the issuer's claims, never a decision, so a
    /// token cached on a route needing `read` is refused on a route needing `write`, over both doors.
    @Test func aCachedAnswerIsJudgedAgainForEachRoutesRequirements() async throws {
        let idp = try await TestIntrospectionIdP { _ in .init(body: TestIntrospectionIdP.active()) }
        try await TestEnvironment.run(configure: Self.opaqueProvider { $0.introspection.endpoint = idp.endpoint }) { (env: TestEnvironment) async throws in
            #expect(try await env.request("/read/x", token: "opaque-r").status == 200)
            let write = try await env.request("/write/x", token: "opaque-r")
            #expect(write.status == 403 && write.json?["reason"] == .string("insufficient_scope"))
            let answers = try await HTTP2IntakeTests.send([HTTP2IntakeTests.Sent(
                name: "write", headers: HTTP2IntakeTests.block(env, path: "/write/y") + [("authorization", "Bearer opaque-r")])], to: env)
            #expect(answers["write"]?.status == 403)
            #expect(try await env.request("/read/y", token: "opaque-r").status == 200)
            #expect(idp.snapshot.calls == 1, "one call, then the cache: \(idp.snapshot.calls)")
            // Gatehouse authenticates as the configured client (basic, form-encoded parts).
            let expected = "Basic " + Data((IntrospectionClient.formEncoded(TestAuthlibServer.clientID) + ":"
                + IntrospectionClient.formEncoded(TestAuthlibServer.clientSecret)).utf8).base64EncodedString()
            #expect(idp.snapshot.authorizations.first == expected)
            #expect(idp.snapshot.forms.first?.contains("token_type_hint=access_token") == true)
        }
        await idp.close()
    }

    /// The Oathkeeper #1082 hole: a token signed out while cached is refused at once, here and, through
    /// PostgreSQL, on the other replica whose cache still holds it.
    @Test func aTokenSignedOutWhileCachedIsRefusedOnEveryReplica() async throws {
        let idp = try await TestIntrospectionIdP { _ in .init(body: TestIntrospectionIdP.active()) }
        try await TestPostgres.with { postgres in
            try await TestEnvironment.run(configure: { configuration, jwks in
                Self.opaqueProvider { $0.introspection.endpoint = idp.endpoint }(&configuration, jwks)
                var revocation = RevocationSettings()
                revocation.store = postgres.url
                configuration.revocation = revocation
            }) { (env: TestEnvironment) async throws in
                try await env.withReplica { replica in
                    let portB = try #require(replica.proxyAddress?.port)
                    #expect(try await env.request("/read/x", token: "opaque-s").status == 200)
                    #expect(try await env.request("/read/x", token: "opaque-s", port: portB).status == 200)
                    #expect(try await env.request("/.gatehouse/signout", method: .POST, token: "opaque-s").status == 200)
                    #expect(try await env.request("/read/x", token: "opaque-s").json?["reason"] == .string("revoked"))
                    #expect(await Contract.eventually(timeout: .seconds(5)) {
                        (try? await env.request("/read/x", token: "opaque-s", port: portB).status) == 401
                    })
                    #expect(idp.snapshot.calls == 2, "each replica asked once; the refusals came from the revocation, not the IdP")
                }
            }
        }
        await idp.close()
    }

    /// Every answer that is not a usable `active: true` gets a defined verdict: 401 for what the issuer
    /// says (inactive, expired, a refresh token), 503 for an issuer that cannot answer.
    @Test func everyKindOfAnswerHasItsVerdict() async throws {
        let now = Int64(Date().timeIntervalSince1970)
        let replies: [(String, TestIntrospectionIdP.Reply, Int, String)] = [
            ("inactive", .init(body: #"{"active":false}"#), 401, "token_inactive"),
            ("string", .init(body: #"{"active":"true","sub":"x"}"#), 503, "introspection_unavailable"),
            ("missing", .init(body: #"{"sub":"x"}"#), 503, "introspection_unavailable"),
            ("array", .init(body: "[true]"), 503, "introspection_unavailable"),
            ("garbage", .init(body: "<html>"), 503, "introspection_unavailable"),
            ("500", .init(status: .internalServerError, body: "{}"), 503, "introspection_unavailable"),
            ("slow", .init(body: TestIntrospectionIdP.active(), delay: .seconds(3)), 503, "introspection_unavailable"),
            ("huge", .init(body: "{\"active\":true,\"pad\":\"" + String(repeating: "x", count: 10 << 20) + "\"}"), 503,
             "introspection_unavailable"),
            ("expired", .init(body: TestIntrospectionIdP.active(["exp": .number(String(now - 3600))])), 401, "expired"),
            ("refresh", .init(body: TestIntrospectionIdP.active(["token_type": .string("refresh_token")])), 401, "wrong_token_type"),
        ]
        let idp = try await TestIntrospectionIdP { token in
            replies.first { "opaque-" + $0.0 == token }?.1 ?? .init(body: TestIntrospectionIdP.active())
        }
        try await TestEnvironment.run(configure: Self.opaqueProvider { $0.introspection.endpoint = idp.endpoint }) { (env: TestEnvironment) async throws in
            for (name, _, status, reason) in replies {
                let response = try await env.request("/read/x", token: "opaque-" + name)
                #expect(response.status == status, "\(name): \(response)")
                #expect(response.json?["reason"] == .string(reason), "\(name)")
                if status == 503 { #expect(response.headers.first(name: "retry-after") == "5", "\(name)") }
            }
            // Inactive is cached for negative_cache_ttl; an issuer that could not answer is asked again.
            let before = idp.snapshot.calls
            _ = try await env.request("/read/x", token: "opaque-inactive")
            _ = try await env.request("/read/x", token: "opaque-500")
            #expect(idp.snapshot.calls == before + 1)
            #expect(try await env.request("/read/x", token: "opaque-fine").status == 200, "the process keeps serving")
        }
        await idp.close()
    }

    /// A flood of random opaque tokens never becomes a flood at the IdP: at most `max_in_flight` calls at
    /// once, the rest 503 `introspection_busy` with `Retry-After` at once; concurrent requests with one token
    /// make one call.
    @Test func aFloodOfRandomTokensIsBoundedAtTheIdPAndOneTokenMakesOneCall() async throws {
        let idp = try await TestIntrospectionIdP { _ in .init(body: TestIntrospectionIdP.active(), delay: .milliseconds(300)) }
        try await TestEnvironment.run(configure: Self.opaqueProvider {
            $0.introspection.endpoint = idp.endpoint
            $0.introspection.maxInFlight = 4
        }) { (env: TestEnvironment) async throws in
            let statuses = try await withThrowingTaskGroup(of: (Int, String?).self) { group in
                for index in 0..<60 {
                    group.addTask {
                        let response = try await env.request("/read/x", token: "opaque-flood-\(index)")
                        return (response.status, response.json?["reason"]?.stringValue)
                    }
                }
                return try await group.reduce(into: [(Int, String?)]()) { $0.append($1) }
            }
            #expect(idp.snapshot.maxInFlight <= 4, "the IdP saw \(idp.snapshot.maxInFlight) calls at once")
            #expect(idp.snapshot.calls <= 60)
            let busy = statuses.filter { $0.1 == "introspection_busy" }
            #expect(!busy.isEmpty && busy.allSatisfy { $0.0 == 503 })
            #expect(statuses.allSatisfy { $0.0 == 200 || $0.1 == "introspection_busy" }, "\(statuses)")

            let callsBefore = idp.snapshot.calls
            let same = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<3 { group.addTask { try await env.request("/read/x", token: "opaque-shared").status } }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(same == [200, 200, 200])
            #expect(idp.snapshot.calls == callsBefore + 1, "single-flight")
            let metrics = MetricsText(try await env.admin("/metrics").body)
            #expect((metrics.value("gatehouse_auth_failures_total", ["reason": "introspection_busy", "provider": "opaque"]) ?? 0) >= 1)
            #expect((metrics.value("gatehouse_introspection_calls_total", ["provider": "opaque", "result": "active"]) ?? 0) >= 1)
        }
        await idp.close()
    }

    /// SSRF and token leakage through the introspection call: an endpoint (or someone on the path) answering
    /// a redirect to another host is never followed, so the token never reaches that host; the answer is 503.
    @Test func aRedirectFromTheIntrospectionEndpointIsNeverFollowed() async throws {
        let elsewhere = try await TestIntrospectionIdP { _ in .init(body: TestIntrospectionIdP.active()) }
        let idp = try await TestIntrospectionIdP { _ in .init(status: .temporaryRedirect, body: "", location: elsewhere.endpoint.absoluteString) }
        try await TestEnvironment.run(configure: Self.opaqueProvider { $0.introspection.endpoint = idp.endpoint }) { (env: TestEnvironment) async throws in
            let response = try await env.request("/read/x", token: "opaque-redirected")
            #expect(response.status == 503 && response.json?["reason"] == .string("introspection_unavailable"))
            #expect(idp.snapshot.calls == 1)
            #expect(elsewhere.snapshot.calls == 0, "the token went to another host")
        }
        await idp.close()
        await elsewhere.close()
    }

    /// `max_calls_per_second`: a flood of new tokens against a fast IdP is bounded by rate too, not only by
    /// concurrency, so it cannot take the CPU the valid tokens' requests need.
    @Test func callsPerSecondAreBoundedEvenAgainstAFastIdP() async throws {
        let idp = try await TestIntrospectionIdP { _ in .init(body: TestIntrospectionIdP.active()) }
        try await TestEnvironment.run(configure: Self.opaqueProvider {
            $0.introspection.endpoint = idp.endpoint
            $0.introspection.maxCallsPerSecond = 5
        }) { (env: TestEnvironment) async throws in
            let clock = ContinuousClock()
            let started = clock.now
            var busy = 0
            for index in 0..<30 where try await env.request("/read/x", token: "opaque-burst-\(index)").json?["reason"] == .string("introspection_busy") {
                busy += 1
            }
            let seconds = Double((clock.now - started).components.seconds) + Double((clock.now - started).components.attoseconds) / 1e18
            // One second's worth at once, then the refill: never more than 5 + 5 per elapsed second.
            #expect(Double(idp.snapshot.calls) <= 5 + 5 * seconds + 1, "\(idp.snapshot.calls) calls in \(seconds) s")
            #expect(busy >= 30 - Int(5 + 5 * seconds + 1))
        }
        await idp.close()
    }
}

