import Foundation
@testable import Gatehouse
import NIOHTTP1
import Testing
import GatehouseSyntax
import GatehouseConfig
import GatehouseProxy

/// `/.gatehouse/*` on the client port: userinfo, sign-out (memory store), the decision endpoint.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct EndpointTests {
    @Test func userinfoReturnsTheVerifiedIdentity() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            let token = TestSigner.ec.token(claims: Claims.valid(extra: ["name": .string("Ada"), "picture": .string("https://p/x.png")]))
            let response = try await env.request("/.gatehouse/userinfo", token: token)
            #expect(response.status == 200)
            let body = try #require(response.json)
            #expect(body["provider"] == .string("test"))
            #expect(body["sub"] == .string("user-1"))
            #expect(body["email"] == .string("ada@example.com"))
            #expect(body["name"] == .string("Ada"))
            #expect(body["picture"] == .string("https://p/x.png"))
            #expect(body["claims"]?.objectValue?["iss"] == .string(Claims.issuer))
            let anonymous = try await env.request("/.gatehouse/userinfo?secret=1")
            #expect(anonymous.status == 401)
            #expect(anonymous.json?["reason"] == .string("missing_token"))
            #expect(env.failureLog.count == 1)
            // The failure log names the endpoint that was refused, without its query.
            #expect(env.failureLog.first?["path"] == .string("/.gatehouse/userinfo"))
            try await env.expectNothingReachedUpstream()
        }
    }

    @Test func signoutRevokesThatTokenOnly() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            let token = TestSigner.ec.token(claims: Claims.valid(extra: ["jti": .string("session-1")]))
            let other = TestSigner.ec.token(claims: Claims.valid(extra: ["jti": .string("session-2")]))
            #expect(try await env.request("/v1/orders", token: token).status == 200)
            let signout = try await env.request("/.gatehouse/signout", method: .POST, token: token)
            #expect(signout.status == 200)
            #expect(signout.json?["signed_out"] == .bool(true))
            let after = try await env.request("/v1/orders", token: token)
            #expect(after.status == 401)
            #expect(after.json?["reason"] == .string("revoked"))
            #expect(env.failureLog.last?["sub"] == .string("user-1"))
            #expect(try await env.request("/v1/orders", token: other).status == 200)
            // Signing out again is idempotent (a client retries after a 503): 200 again, still revoked.
            #expect(try await env.request("/.gatehouse/signout", method: .POST, token: token).status == 200)
            #expect(try await env.request("/v1/orders", token: token).status == 401)
            // Only sign-outs take a revoked token: the other endpoints refuse it.
            #expect(try await env.request("/.gatehouse/userinfo", token: token).status == 401)
        }
    }

    @Test func signoutWithoutJTIRevokesByTokenDigest() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            let token = TestSigner.rsa.token(claims: Claims.valid())
            #expect(try await env.request("/.gatehouse/signout", method: .POST, token: token).status == 200)
            #expect(try await env.request("/x", token: token).json?["reason"] == .string("revoked"))
        }
    }

    @Test func signoutEverywhereRejectsOlderTokensOfTheSubjectOnly() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            let now = Int64(Date().timeIntervalSince1970)
            let old = TestSigner.ec.token(claims: Claims.valid(extra: ["iat": .number(String(now - 100))]))
            let otherUser = TestSigner.ec.token(claims: Claims.valid(subject: "user-2", extra: ["iat": .number(String(now - 100))]))
            #expect(try await env.request("/.gatehouse/signout-everywhere", method: .POST, token: old).status == 200)
            #expect(try await env.request("/x", token: old).json?["reason"] == .string("revoked"))
            // A revoked token cannot sign out everywhere again (that would move the cut-off past the
            // user's next sign-in), while a plain sign-out of it stays idempotent.
            #expect(try await env.request("/.gatehouse/signout-everywhere", method: .POST, token: old).status == 401)
            #expect(try await env.request("/x", token: otherUser).status == 200)
            let newer = TestSigner.ec.token(claims: Claims.valid(extra: ["iat": .number(String(now + 2))]))
            #expect(try await env.request("/x", token: newer).status == 200)
        }
    }

    @Test func checkEndpointJudgesTheDescribedRequest() async throws {
        try await TestEnvironment.run(configure: { configuration, _ in
            var health = RouteSettings(match: .prefix("/health"))
            health.auth = .public
            var sync = RouteSettings(match: .prefix("/v1/sync"))
            sync.scopes = ["sync:write"]
            configuration.routes = [health, sync]
        }) { (env: TestEnvironment) async throws in
            let token = TestSigner.ec.token(claims: Claims.valid(extra: ["scope": .string("read")]))
            let allowed = try await env.request("/.gatehouse/check", token: token, headers: [
                ("X-Forwarded-Method", "GET"), ("X-Forwarded-Uri", "/v1/orders?page=2"),
            ])
            #expect(allowed.status == 200)
            #expect(allowed.headers.first(name: "x-auth-subject") == "user-1")
            #expect(allowed.headers.first(name: "x-auth-provider") == "test")
            let anonymous = try await env.request("/.gatehouse/check", headers: [("X-Original-URI", "/v1/orders")])
            #expect(anonymous.status == 401)
            #expect(anonymous.headers.first(name: "www-authenticate") == "Bearer realm=\"gatehouse\"")
            let line = try #require(env.failureLog.last)
            #expect(line["path"] == .string("/v1/orders"))
            let publicPath = try await env.request("/.gatehouse/check", headers: [("X-Forwarded-Uri", "/health")])
            #expect(publicPath.status == 200)
            #expect(publicPath.headers.first(name: "x-auth-subject") == nil)
            let scoped = try await env.request("/.gatehouse/check", token: token, headers: [
                ("X-Forwarded-Method", "POST"), ("X-Forwarded-Uri", "/v1/sync"),
            ])
            #expect(scoped.status == 403)
            #expect(scoped.json?["reason"] == .string("insufficient_scope"))
            let traversal = try await env.request("/.gatehouse/check", headers: [("X-Forwarded-Uri", "/health/../v1/orders")])
            #expect(traversal.status == 401)
            try await env.expectNothingReachedUpstream()
        }
    }

    @Test func unknownEndpointsAndWrongMethodsAreAnsweredLocally() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            #expect(try await env.request("/.gatehouse/nope").status == 404)
            let wrongMethod = try await env.request("/.gatehouse/signout", token: TestSigner.ec.token(claims: Claims.valid()))
            #expect(wrongMethod.status == 405)
            #expect(wrongMethod.headers.first(name: "allow") == "POST")
            try await env.expectNothingReachedUpstream()
        }
    }
}
