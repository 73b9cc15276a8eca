import Foundation
@testable import Gatehouse
import Testing
import GatehouseSyntax
import GatehouseConfig

/// Configuration reload (SIGHUP calls `reload`): new requests get the new rules at once, requests in
/// flight are not disturbed, and changes that need a restart are reported and left alone.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct ReloadTests {
    @Test func newRouteRuleIsInForceForTheNextRequest() async throws {
        try await TestEnvironment.run(configure: { configuration, _ in
            var open = RouteSettings(match: .prefix("/"))
            open.auth = .public
            configuration.routes = [open]
        }) { (env: TestEnvironment) async throws in
            #expect(try await env.request("/v1/orders").status == 200)
            var next = env.gatehouse.configuration
            next.routes = []
            #expect(await env.gatehouse.reload(next).isEmpty)
            #expect(try await env.request("/v1/orders").status == 401)
        }
    }

    @Test func reloadUnderLoadFailsNoRequest() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            let token = TestSigner.ec.token(claims: Claims.valid())
            let statuses = try await withThrowingTaskGroup(of: [Int].self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        var seen: [Int] = []
                        for _ in 0..<60 { seen.append(try await env.request("/v1/orders", token: token).status) }
                        return seen
                    }
                }
                group.addTask {
                    for round in 0..<30 {
                        var next = env.gatehouse.configuration
                        next.headers.mappings.append(HeaderMapping(name: "X-Auth-Round", claimPath: round.isMultiple(of: 2) ? "sub" : "email"))
                        await env.gatehouse.reload(next)
                        try await Task.sleep(for: .milliseconds(5))
                    }
                    return []
                }
                return try await group.reduce(into: [Int]()) { $0 += $1 }
            }
            #expect(statuses.count == 240)
            #expect(statuses.allSatisfy { $0 == 200 })
            #expect(env.upstream.last?.value("x-auth-round") != nil)
        }
    }

    @Test func changesThatNeedARestartAreReportedAndKept() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            var next = env.gatehouse.configuration
            next.listen.address = SocketAddressSetting(host: "127.0.0.1", port: 1)
            next.upstream.url = URL(string: "http://127.0.0.1:9")!
            next.upstream.timeout = .seconds(3)
            let needRestart = await env.gatehouse.reload(next)
            #expect(needRestart == ["[listen]", "[upstream] url/connect_timeout/protocol/ca_file"])
            // Still the old listener and the old upstream.
            #expect(try await env.request("/v1/orders", token: TestSigner.ec.token(claims: Claims.valid())).status == 200)
        }
    }

    @Test func providersAreReloadedAndUnchangedOnesKeepTheirKeys() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            let fetchesBefore = env.jwks.fetchCount
            var next = env.gatehouse.configuration
            // A second provider (another issuer on the same key server) and a stricter first one.
            var partner = ProviderSettings(name: "partner", type: .jwks)
            partner.issuer = "https://partner.test"
            partner.jwksURI = env.jwks.jwksURL
            partner.audiences = [Claims.audience]
            next.providers.append(partner)
            #expect(await env.gatehouse.reload(next).isEmpty)
            // The new provider's keys were fetched before the swap: its very first token passes.
            let partnerToken = TestSigner.ec.token(claims: Claims.valid(extra: ["iss": .string("https://partner.test")]))
            let response = try await env.request("/v1/orders", token: partnerToken)
            #expect(response.status == 200)
            #expect(env.upstream.last?.value("x-auth-provider") == "partner")
            // The unchanged provider kept its keys: one fetch in all, for the new provider.
            #expect(env.jwks.fetchCount == fetchesBefore + 1)
            #expect(try await env.request("/v1/orders", token: TestSigner.rsa.token(claims: Claims.valid())).status == 200)
            #expect(env.jwks.fetchCount == fetchesBefore + 1)
            let ready = try await env.admin("/readyz")
            #expect(ready.status == 200)
            #expect(ready.json?["providers"]?.arrayValue?.count == 2)

            // Removing a provider: its tokens are refused at once.
            var fewer = env.gatehouse.configuration
            fewer.providers.removeFirst()
            #expect(await env.gatehouse.reload(fewer).isEmpty)
            #expect(try await env.request("/v1/orders", token: TestSigner.rsa.token(claims: Claims.valid())).status == 401)
            #expect(try await env.request("/v1/orders", token: partnerToken).status == 200)
            #expect(env.jwks.fetchCount == fetchesBefore + 1)
        }
    }

    /// An introspection provider added by a reload judges opaque tokens from the next request; it has no keys,
    /// so nothing is fetched for it, nothing fails, and readiness does not wait for it.
    @Test func anIntrospectionProviderAddedByAReloadServesTheNextRequest() async throws {
        let idp = try await TestIntrospectionIdP { _ in .init(body: TestIntrospectionIdP.active()) }
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            let fetchesBefore = env.jwks.fetchCount
            #expect(try await env.request("/v1/orders", token: "opaque-after-reload").json?["reason"] == .string("malformed_token"))
            var next = env.gatehouse.configuration
            var opaque = ProviderSettings(name: "opaque", type: .introspection)
            opaque.introspection.endpoint = idp.endpoint
            opaque.introspection.clientID = "rs"
            next.providers.append(opaque)
            #expect(await env.gatehouse.reload(next).isEmpty)
            #expect(try await env.request("/v1/orders", token: "opaque-after-reload").status == 200)
            #expect(env.jwks.fetchCount == fetchesBefore)
            #expect(try await env.admin("/readyz").status == 200)
            #expect(!env.operationalLog.contains { $0.contains("opaque") && $0.lowercased().contains("fail") }, "\(env.operationalLog)")
        }
        await idp.close()
    }

    @Test func aBrokenFileOnHangUpIsRefusedAndTheRunningConfigurationStays() async throws {
        let path = NSTemporaryDirectory() + "gatehouse-reload-" + UUID().uuidString + ".toml"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try await TestEnvironment.run(configurationPath: path) { (env: TestEnvironment) async throws in
            let valid = env.minimalTOML + """
                [[route]]
                prefix = "/open"
                auth = "public"
                """
            #expect(try await env.request("/open").status == 401)
            try (valid + "\n[upstream.oops]\n").write(toFile: path, atomically: true, encoding: .utf8)
            let refused = await env.gatehouse.hangUp()
            #expect(!refused.isEmpty)
            #expect(try await env.request("/v1/orders", token: TestSigner.ec.token(claims: Claims.valid())).status == 200)
            #expect(try await env.request("/open").status == 401)
            try valid.write(toFile: path, atomically: true, encoding: .utf8)
            #expect(await env.gatehouse.hangUp().isEmpty)
            #expect(try await env.request("/open").status == 200)
        }
    }
}
