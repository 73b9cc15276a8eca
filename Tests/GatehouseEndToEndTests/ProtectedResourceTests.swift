import Foundation
@testable import Gatehouse
import NIOHTTP1
import Testing
import GatehouseSyntax
import GatehouseConfig

/// `[[resource]]` (docs/reference.md §17): the RFC 9728 metadata document, the `resource_metadata` challenge, RFC 8707
/// audience binding, an MCP server's `Origin` rule and `forward_token`, through both client doors. "Never forwarded"
/// is proved by a marker request forwarded after it: the upstream saw the marker and nothing else.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct ProtectedResourceTests {
    /// The resource's url names 127.0.0.1 without port: the Host of every test request (the port is not compared).
    static let url = "http://127.0.0.1/mcp"
    static let sibling = "http://127.0.0.1/tools"

    static func configure(mcp: Bool = true, _ configuration: inout Configuration) {
        var resource = ResourceSettings(url: url, origin: "http://127.0.0.1", host: "127.0.0.1", path: "/mcp", authorizationServers: [Claims.issuer])
        resource.mcp = mcp
        resource.name = "Repository tools"
        resource.scopesSupported = ["mcp:tools", "repo:admin"]
        resource.allowedOrigins = ["https://app.example.com"]
        var sibling = ResourceSettings(url: sibling, origin: "http://127.0.0.1", host: "127.0.0.1", path: "/tools", authorizationServers: [Claims.issuer])
        sibling.mcp = mcp
        configuration.resources = [resource, sibling]
        var admin = RouteSettings(match: .prefix("/mcp/admin"))
        admin.scopes = ["repo:admin"]
        var tools = RouteSettings(match: .prefix("/mcp"))
        tools.scopes = ["mcp:tools"]
        configuration.routes = [admin, tools]
    }

    static func run(mcp: Bool = true, _ body: (TestEnvironment) async throws -> Void) async throws {
        try await TestEnvironment.run(configure: { configuration, _ in configure(mcp: mcp, &configuration) }, body)
    }

    static func token(audience: JSONValue = .string(url), scope: String = "mcp:tools", subject: String = "user-1") -> String {
        TestSigner.ec.token(claims: Claims.valid(subject: subject, extra: ["aud": audience, "scope": .string(scope)]))
    }

    /// The marker: forwarded, and then the only request the upstream has seen since `reset()`.
    static func expectOnlyMarkerReachedUpstream(_ env: TestEnvironment, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let marker = try await env.request("/mcp/marker", token: token())
        #expect(marker.status == 200, sourceLocation: sourceLocation)
        #expect(env.upstream.requests.map(\.uri) == ["/mcp/marker"], sourceLocation: sourceLocation)
    }

    @Test func metadataDocumentIsAnsweredFieldByFieldAndNeverForwarded() async throws {
        try await Self.run { (env: TestEnvironment) async throws in
            let response = try await env.request("/.well-known/oauth-protected-resource/mcp")
            #expect(response.status == 200)
            #expect(response.headers.first(name: "content-type") == "application/json")
            #expect(response.headers.first(name: "cache-control") == "max-age=300")
            let document = try #require(response.json)
            #expect(document["resource"] == .string(Self.url))
            #expect(document["authorization_servers"] == .array([.string(Claims.issuer)]))
            #expect(document["bearer_methods_supported"] == .array([.string("header")]))
            #expect(document["scopes_supported"] == .array([.string("mcp:tools"), .string("repo:admin")]))
            #expect(document["resource_name"] == .string("Repository tools"))
            // The test provider takes DPoP-bound tokens (`dpop` allowed) and does not require them.
            #expect(document["dpop_signing_alg_values_supported"]?.arrayValue?.contains(.string("ES256")) == true)
            #expect(document["dpop_bound_access_tokens_required"] == nil)
            // The sibling's document is its own, at its own path (RFC 9728 §3.1 path insertion).
            let sibling = try await env.request("/.well-known/oauth-protected-resource/tools")
            #expect(sibling.json?["resource"] == .string(Self.sibling))
            #expect(sibling.json?["resource_name"] == nil)
            let head = try await env.request("/.well-known/oauth-protected-resource/mcp", method: .HEAD)
            #expect(head.status == 200 && head.body.isEmpty)
            let post = try await env.request("/.well-known/oauth-protected-resource/mcp", method: .POST, body: "{}")
            #expect(post.status == 405)
            #expect(post.headers.first(name: "allow") == "GET, HEAD")
            #expect(env.failureLog.isEmpty)
            try await Self.expectOnlyMarkerReachedUpstream(env)
        }
    }

    @Test func metadataOfAResourceWithoutPathIsAtTheBareWellKnownPath() async throws {
        try await TestEnvironment.run(configure: { configuration, _ in
            configuration.resources = [ResourceSettings(
                url: "http://127.0.0.1", origin: "http://127.0.0.1", host: "127.0.0.1", path: "", authorizationServers: [Claims.issuer])]
        }) { (env: TestEnvironment) async throws in
            let response = try await env.request("/.well-known/oauth-protected-resource")
            #expect(response.status == 200)
            #expect(response.json?["resource"] == .string("http://127.0.0.1"))
            // Every path of the host is under it: a 401 anywhere names the document.
            let refused = try await env.request("/anything")
            #expect(refused.headers.first(name: "www-authenticate")
                == "Bearer realm=\"gatehouse\", resource_metadata=\"http://127.0.0.1/.well-known/oauth-protected-resource\"")
        }
    }

    @Test func everyRefusalUnderAResourceNamesItsMetadataAndTheRouteScopes() async throws {
        try await Self.run { (env: TestEnvironment) async throws in
            let missing = try await env.request("/mcp")
            #expect(missing.status == 401)
            #expect(missing.headers.first(name: "www-authenticate") == "Bearer realm=\"gatehouse\", "
                + "resource_metadata=\"http://127.0.0.1/.well-known/oauth-protected-resource/mcp\", scope=\"mcp:tools\"")
            let bad = try await env.request("/mcp", token: "not.a.token")
            #expect(bad.status == 401)
            let challenge = try #require(bad.headers.first(name: "www-authenticate"))
            #expect(challenge.hasPrefix("Bearer realm=\"gatehouse\", error=\"invalid_token\""))
            #expect(challenge.hasSuffix(", resource_metadata=\"http://127.0.0.1/.well-known/oauth-protected-resource/mcp\", scope=\"mcp:tools\""))
            // Step-up: the 403 names every scope the route requires and where to learn about the resource.
            let stepUp = try await env.request("/mcp/admin", token: Self.token())
            #expect(stepUp.status == 403)
            #expect(stepUp.json?["reason"] == .string("insufficient_scope"))
            #expect(stepUp.headers.first(name: "www-authenticate") == "Bearer realm=\"gatehouse\", error=\"insufficient_scope\", "
                + "scope=\"repo:admin\", resource_metadata=\"http://127.0.0.1/.well-known/oauth-protected-resource/mcp\"")
            #expect(try await env.request("/mcp/admin", token: Self.token(scope: "mcp:tools repo:admin")).status == 200)
            // Outside every resource the challenge is as before.
            let outside = try await env.request("/v1/orders")
            #expect(outside.headers.first(name: "www-authenticate") == "Bearer realm=\"gatehouse\"")
        }
    }

    @Test func aTokenIsGoodForTheResourceItNamesOnly() async throws {
        try await Self.run(mcp: false) { (env: TestEnvironment) async throws in
            #expect(try await env.request("/mcp/x", token: Self.token()).status == 200)
            #expect(try await env.request("/mcp/x", token: Self.token(audience: .array([.string("other"), .string(Self.url)]))).status == 200)
            // A token the same authorization server issued for the sibling resource.
            let sibling = try await env.request("/mcp/x", token: Self.token(audience: .string(Self.sibling)))
            #expect(sibling.status == 401)
            #expect(sibling.json?["reason"] == .string("wrong_audience"))
            #expect(env.failureLog.last?["reason"] == .string("wrong_audience"))
            #expect(env.failureLog.last?["sub"] == .string("user-1"))
            // The provider's own audience does not widen the resource's.
            let providerAudience = try await env.request("/mcp/x", token: Self.token(audience: .string(Claims.audience)))
            #expect(providerAudience.json?["reason"] == .string("wrong_audience"))
            // The url is compared exactly: no trailing slash, no other case.
            #expect(try await env.request("/mcp/x", token: Self.token(audience: .string(Self.url + "/"))).status == 401)
            #expect(try await env.request("/mcp/x", token: Self.token(audience: .string("HTTP://127.0.0.1/mcp"))).status == 401)
            // A resource's token outside it: refused; the provider's own audience outside: as before.
            let outside = try await env.request("/v1/orders", token: Self.token())
            #expect(outside.json?["reason"] == .string("wrong_audience"))
            #expect(try await env.request("/v1/orders", token: Self.token(audience: .string(Claims.audience))).status == 200)
            // Segment-aware: /mcpx is not under /mcp.
            #expect(try await env.request("/mcpx", token: Self.token()).json?["reason"] == .string("wrong_audience"))
        }
    }

    @Test func anMCPServerRefusesBrowserOriginsItDoesNotAllowBeforeTheToken() async throws {
        try await Self.run { (env: TestEnvironment) async throws in
            let evil = try await env.request("/mcp", method: .POST, headers: [("Origin", "http://evil.example")], body: "{}")
            #expect(evil.status == 403)
            #expect(evil.json?["reason"] == .string("origin_not_allowed"))
            #expect(evil.headers.first(name: "www-authenticate") == nil)
            let line = try #require(env.failureLog.last)
            #expect(line["reason"] == .string("origin_not_allowed"))
            #expect(line["status"] == .number("403"))
            // Refused with a valid token too: the origin is judged first.
            #expect(try await env.request("/mcp", token: Self.token(), headers: [("Origin", "http://127.0.0.1.evil.example")]).status == 403)
            #expect(try await env.request("/mcp", token: Self.token(), headers: [("Origin", "null")]).status == 403)
            // The url's own origin (any case, its default port), an allowed one, and no Origin at all pass.
            #expect(try await env.request("/mcp/a", token: Self.token(), headers: [("Origin", "HTTP://127.0.0.1:80")]).status == 200)
            #expect(try await env.request("/mcp/b", token: Self.token(), headers: [("Origin", "https://app.example.com")]).status == 200)
            env.upstream.reset()
            try await Self.expectOnlyMarkerReachedUpstream(env)
        }
    }

    @Test func anMCPServerGetsWhoTheCallerIsButNotTheToken() async throws {
        try await Self.run { (env: TestEnvironment) async throws in
            #expect(try await env.request("/mcp", token: Self.token()).status == 200)
            let received = try #require(env.upstream.last)
            #expect(received.value("authorization") == nil)
            #expect(received.value("x-auth-subject") == "user-1")
        }
        // Without `mcp` the resource follows `[upstream] forward_token` (true by default).
        try await Self.run(mcp: false) { (env: TestEnvironment) async throws in
            #expect(try await env.request("/mcp", token: Self.token()).status == 200)
            #expect(env.upstream.last?.value("authorization")?.hasPrefix("Bearer ") == true)
        }
    }

    @Test func theHTTP2DoorAnswersAndChallengesAlike() async throws {
        try await Self.run { (env: TestEnvironment) async throws in
            let answers = try await HTTP2IntakeTests.send([
                .init(name: "metadata", headers: HTTP2IntakeTests.block(env, path: "/.well-known/oauth-protected-resource/mcp")),
                .init(name: "missing", headers: HTTP2IntakeTests.block(env, path: "/mcp")),
                .init(name: "sibling", headers: HTTP2IntakeTests.block(env, path: "/mcp", token: Self.token(audience: .string(Self.sibling)))),
                .init(name: "origin", headers: HTTP2IntakeTests.block(env, path: "/mcp", token: Self.token(), [("origin", "http://evil.example")])),
                .init(name: "admitted", headers: HTTP2IntakeTests.block(env, path: "/mcp/h2", token: Self.token())),
            ], to: env)
            #expect(answers["metadata"]?.status == 200)
            #expect(answers["metadata"]?.json?["resource"] == .string(Self.url))
            #expect(answers["missing"]?.status == 401)
            #expect(answers["missing"]?.value("www-authenticate")?.contains("resource_metadata=\"http://127.0.0.1/.well-known/oauth-protected-resource/mcp\"") == true)
            #expect(answers["sibling"]?.json?["reason"] == .string("wrong_audience"))
            #expect(answers["origin"]?.status == 403)
            #expect(answers["admitted"]?.status == 200)
            #expect(env.upstream.requests.map(\.uri) == ["/mcp/h2"])
            #expect(env.upstream.last?.value("authorization") == nil)
        }
    }
}
