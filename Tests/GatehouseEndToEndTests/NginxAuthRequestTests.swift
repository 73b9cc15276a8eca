import Foundation
@testable import Gatehouse
import NIOHTTP1
import Testing

/// `deploy/nginx/auth-request.conf` run by a real nginx: nginx fronts the app and asks Gatehouse's
/// `/.gatehouse/check` about every request (auth_request).
@Suite(.timeLimit(.minutes(2)))
struct NginxAuthRequestTests {
    private static let exampleFile = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("deploy/nginx/auth-request.conf").path

    @Test func theShippedExampleGuardsTheAppThroughGatehouse() async throws {
        try await TestEnvironment.run(configure: { configuration, _ in
            var health = RouteSettings(match: .prefix("/health"))
            health.auth = .public
            var admin = RouteSettings(match: .prefix("/admin"))
            admin.scopes = ["admin"]
            configuration.routes = [health, admin]
        }) { (env: TestEnvironment) async throws in
            try await TestNginx.with(
                serverFile: Self.exampleFile,
                replacements: [("127.0.0.1:3000", "127.0.0.1:\(env.upstream.port)"), ("127.0.0.1:8080", "127.0.0.1:\(env.port)")]
            ) { nginx in
                let spoofed = [("X-Auth-Subject", "admin"), ("X-Auth-Name", "Mallory"), ("X-Auth-Claims", "e30")]

                // No token: 401 with Gatehouse's challenge; the app never sees the request.
                let anonymous = try await env.request("/orders?id=7", headers: spoofed, port: nginx.port)
                #expect(anonymous.status == 401)
                #expect(anonymous.headers.first(name: "www-authenticate")?.hasPrefix("Bearer") == true)
                try await env.expectNothingReachedUpstream()
                let line = try #require(env.failureLog.last)
                #expect(line["path"] == .string("/orders"))
                #expect(line["reason"] == .string("missing_token"))

                // A valid token: the app gets the verified subject, and none of the client's copies.
                let token = TestSigner.ec.token(claims: Claims.valid())
                let allowed = try await env.request("/orders?id=7", token: token, headers: spoofed, port: nginx.port)
                #expect(allowed.status == 200)
                let forwarded = try #require(env.upstream.last)
                #expect(forwarded.uri == "/orders?id=7")
                #expect(forwarded.values("x-auth-subject") == ["user-1"])
                #expect(forwarded.values("x-auth-provider") == ["test"])
                #expect(forwarded.values("x-auth-name").isEmpty)
                #expect(forwarded.values("x-auth-claims").count == 1)
                #expect(forwarded.value("x-auth-claims") != "e30")

                // A public route: allowed without a token, and still no spoofed identity.
                let health = try await env.request("/health", headers: spoofed, port: nginx.port)
                #expect(health.status == 200)
                #expect(env.upstream.last?.values("x-auth-subject").isEmpty == true)
                #expect(env.upstream.last?.values("x-auth-name").isEmpty == true)

                // Route requirements are Gatehouse's: 403 for a missing scope.
                #expect(try await env.request("/admin/users", token: token, port: nginx.port).status == 403)
                let scoped = TestSigner.ec.token(claims: Claims.valid(extra: ["scope": .string("admin")]))
                #expect(try await env.request("/admin/users", token: scoped, port: nginx.port).status == 200)

                // A bad token is refused, and the app's request count did not move.
                let before = env.upstream.requestCount
                let forged = TestSigner.ec.token(claims: Claims.valid()) + "x"
                #expect(try await env.request("/orders", token: forged, port: nginx.port).status == 401)
                #expect(env.upstream.requestCount == before)

                // Gatehouse's own client endpoints pass through nginx; the decision endpoint does not.
                let userinfo = try await env.request("/.gatehouse/userinfo", token: token, port: nginx.port)
                #expect(userinfo.status == 200)
                #expect(userinfo.json?["sub"] == .string("user-1"))
                #expect(try await env.request("/.gatehouse/signout", method: .POST, token: token, port: nginx.port).status == 200)
                #expect(try await env.request("/orders", token: token, port: nginx.port).status == 401)
            }
        }
    }
}
