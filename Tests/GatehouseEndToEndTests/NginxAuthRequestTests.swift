import Foundation
@testable import Gatehouse
import NIOHTTP1
import Testing
import GatehouseSyntax
import GatehouseRules
import GatehouseConfig
import GatehouseExchange
import GatehouseExtAuthz

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

    /// Issue 44 through the example: nginx names the host it was asked for in `X-Forwarded-Host`, so a route of one
    /// host applies only under that host, and a `when` rule reads it as `request.host`.
    @Test func routesAndRulesJudgeTheHostNginxWasAskedFor() async throws {
        try await TestEnvironment.run(configure: { configuration, _ in
            var reports = RouteSettings(match: .prefix("/reports"))
            reports.auth = .public
            reports.hosts = ["reports.example.com"]
            var ruled = RouteSettings(match: .prefix("/ruled"))
            ruled.when = try! RuleExpression(rule: "request.host == 'orders.example.com' && claims.sub == 'user-1'", maxHeaderBytes: 16384)  // safe: valid
            configuration.routes = [reports, ruled]
        }) { (env: TestEnvironment) async throws in
            try await TestNginx.with(
                serverFile: Self.exampleFile,
                replacements: [("127.0.0.1:3000", "127.0.0.1:\(env.upstream.port)"), ("127.0.0.1:8080", "127.0.0.1:\(env.port)")]
            ) { nginx in
                #expect(try await env.request("/reports/q3", headers: [("Host", "reports.example.com")], port: nginx.port).status == 200)
                #expect(try await env.request("/reports/q3", headers: [("Host", "orders.example.com")], port: nginx.port).status == 401,
                        "a route of another host does not apply: the default rule wants a token")
                let token = TestSigner.ec.token(claims: Claims.valid())
                #expect(try await env.request("/ruled/x", token: token, headers: [("Host", "orders.example.com")], port: nginx.port).status == 200)
                let denied = try await env.request("/ruled/x", token: token, headers: [("Host", "shop.example.com")], port: nginx.port)
                #expect(denied.status == 403)
                #expect(env.failureLog.last?["detail"] == .string("rule route[1].when is false"))
            }
        }
    }

    /// Issue 42: a valid token and a forged value for every name Gatehouse can set (and their `_` spellings, which
    /// nginx drops): the app sees none of the forged values, and Gatehouse's identity and signed assertion. A 503 of
    /// Gatehouse's (no keys for the provider) reaches the client as 503 with its Retry-After, request id and body,
    /// not as nginx's 500.
    @Test func noForgedIdentityHeaderReachesTheAppAndA503StaysA503() async throws {
        let keys = try AssertionTests.KeyFiles()
        defer { keys.remove() }
        let signingKey = try AssertionKey.load(file: try keys.p256("signing.pem"), needs: .privateKey)
        try await TestEnvironment.run(waitForKeys: false, configure: { configuration, _ in
            configuration.assertion = AssertionSettings(issuer: AssertionTests.issuer, audience: "orders", signingKey: signingKey)
            configuration.providers.append(.keyless())
        }) { (env: TestEnvironment) async throws in
            try await FrontDoorTableTests.waitForTheTestProvider(env)
            try await TestNginx.with(
                serverFile: Self.exampleFile,
                replacements: [("127.0.0.1:3000", "127.0.0.1:\(env.upstream.port)"), ("127.0.0.1:8080", "127.0.0.1:\(env.port)")]
            ) { nginx in
                let names = IdentityHeaderCatalog.names(for: env.gatehouse.configuration)
                #expect(names.count >= 17, "\(names)")
                let forged = names.flatMap { name in
                    [(name, "forged"), (name.replacingOccurrences(of: "-", with: "_"), "forged")]
                }
                let token = TestSigner.ec.token(claims: Claims.valid(extra: ["name": .string("Ada")]))
                let allowed = try await env.request("/orders", token: token, headers: forged, port: nginx.port)
                #expect(allowed.status == 200, "\(allowed.status) \(allowed.body)")
                let received = try #require(env.upstream.last)
                let leaked = received.headers.filter { $0.1 == "forged" }
                #expect(leaked.isEmpty, "forged values reached the app: \(leaked)")
                #expect(received.values("x-auth-subject") == ["user-1"])
                #expect(received.values("x-auth-name") == ["Ada"])
                #expect(received.values("x-auth-provider") == ["test"])
                let assertion = received.values("x-gatehouse-assertion")
                #expect(assertion.count == 1 && assertion.first?.split(separator: ".").count == 3, "Gatehouse's assertion: \(assertion)")

                // Gatehouse's 503: what a client of Gatehouse itself would get, through nginx.
                let keyless = TestSigner.ec.token(claims: Claims.valid(extra: ["iss": .string(FrontDoorTableTests.downIssuer)]))
                let direct = try await env.request("/orders", token: keyless)
                #expect(direct.status == 503)
                let before = env.upstream.requestCount
                let viaNginx = try await env.request("/orders", token: keyless, headers: [("X-Request-Id", "nginx-503")], port: nginx.port)
                #expect(viaNginx.status == 503, "\(viaNginx.status) \(viaNginx.body)")
                #expect(viaNginx.headers.first(name: "retry-after") == direct.headers.first(name: "retry-after"))
                #expect(viaNginx.headers.first(name: "content-type")?.hasPrefix("application/json") == true)
                #expect(viaNginx.headers.first(name: "x-request-id") == "nginx-503")
                var expected = try #require(direct.json)
                expected["request_id"] = .string("nginx-503")
                #expect(viaNginx.json == expected, "nginx: \(viaNginx.body); Gatehouse: \(direct.body)")
                #expect(env.upstream.requestCount == before)
                #expect(env.failureLog.filter { $0["request_id"] == .string("nginx-503") }.count == 1, "one failure-log line")
            }
        }
    }
}
