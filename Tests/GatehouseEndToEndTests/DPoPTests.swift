import Crypto
import Foundation
@testable import Gatehouse
import NIOCore
import NIOHTTP1
import Testing
import GatehouseSyntax
import GatehouseConfig
import GatehouseAuth

/// DPoP (RFC 9449) end to end: the attack matrix of §11 and every check of §4.3, each through the
/// request core alone and both front doors (`FrontDoorTableTests`' machinery), with its status, reason
/// and failure-log line; what the upstream gets; the challenges; replay on one replica and across two
/// over PostgreSQL; server nonces; gRPC.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct DPoPTests {
    typealias Case = FrontDoorTableTests.Case

    static func configure(_ configuration: inout Configuration, _ jwks: TestJWKSServer) {
        var dpopOnly = RouteSettings(match: .prefix("/dpop-only"))
        dpopOnly.dpop = .required
        var bearerOnly = RouteSettings(match: .prefix("/bearer-only"))
        bearerOnly.dpop = .off
        configuration.routes = [dpopOnly, bearerOnly]
        // The attack matrix runs through ext_authz Checks too (FrontDoorTableTests.Door.check).
        configuration.extAuthz = ExtAuthzSettings(address: SocketAddressSetting(host: "127.0.0.1", port: 0))
    }

    /// Fresh proofs for one door (a `jti` is good once).
    static func cases(_ env: TestEnvironment, client: TestDPoPKey) -> [Case] {
        let origin = "http://127.0.0.1:\(env.port)"
        let url = origin + "/v1/orders"
        let token = client.boundToken()
        let now = Int64(Date().timeIntervalSince1970)
        func dpop(_ name: String, path: String = "/v1/orders", token: String = token, proofs: [String], _ reason: String?) -> Case {
            let expected: FrontDoorTableTests.Expected = reason.map { .local(status: 401, reason: $0) } ?? .forwarded(status: 200)
            return Case(name: name, path: path, headers: [("authorization", "DPoP \(token)")] + proofs.map { ("dpop", $0) }, expected: expected)
        }
        func invalid(_ name: String, claims: [String: JSONValue] = [:], header: [String: JSONValue] = [:],
                     signedBy: P256.Signing.PrivateKey? = nil) -> Case {
            dpop(name, proofs: [client.proof("GET", url, token: token, claims: claims, header: header, signedBy: signedBy)], "invalid_dpop_proof")
        }
        var privateJWK = client.jwk
        privateJWK["d"] = .string(Base64URL.encode(Array(client.key.rawRepresentation)))
        let other = TestDPoPKey()
        // ES256 signatures are randomized: each token is made once and used for both its header and its proof's ath.
        let unbound = TestSigner.ec.token(claims: Claims.valid())
        let boundToOther = other.boundToken()
        return [
            dpop("forwarded", proofs: [client.proof("GET", url, token: token)], nil),
            dpop("noProof", proofs: [], "invalid_dpop_proof"),
            dpop("twoProofs", proofs: [client.proof("GET", url, token: token), client.proof("GET", url, token: token)], "invalid_dpop_proof"),
            invalid("typMissing", header: ["typ": .null]),
            invalid("typJWT", header: ["typ": .string("JWT")]),
            invalid("algNone", header: ["alg": .string("none")]),
            invalid("algHS256", header: ["alg": .string("HS256")]),
            invalid("jwkMissing", header: ["jwk": .null]),
            invalid("jwkWithPrivateKey", header: ["jwk": .object(privateJWK)]),
            invalid("signedByAnotherKey", signedBy: other.key),
            invalid("htmWrong", claims: ["htm": .string("POST")]),
            invalid("htuOtherHost", claims: ["htu": .string("http://elsewhere.test/v1/orders")]),
            invalid("htuOtherPath", claims: ["htu": .string(origin + "/v1/payments")]),
            // RFC 9449 §4.3 check 9 ignores the query: a client may sign the URL with it (requests-oauth2client does).
            dpop("htuWithAnotherQuery", proofs: [client.proof("GET", url + "?page=7#top", token: token)], nil),
            invalid("htuRelative", claims: ["htu": .string("/v1/orders")]),
            invalid("iatOld", claims: ["iat": .number(String(now - 600))]),
            invalid("iatFuture", claims: ["iat": .number(String(now + 600))]),
            invalid("jtiMissing", claims: ["jti": .null]),
            invalid("htmMissing", claims: ["htm": .null]),
            invalid("htuMissing", claims: ["htu": .null]),
            invalid("iatMissing", claims: ["iat": .null]),
            invalid("athMissing", claims: ["ath": .null]),
            invalid("athOfAnotherToken", claims: ["ath": .string(TestDPoPKey.accessTokenHash(client.boundToken(extra: ["jti": .string("x")])))]),
            invalid("proofTooLarge", claims: ["pad": .string(String(repeating: "p", count: 9000))]),
            dpop("unboundToken", token: unbound, proofs: [client.proof("GET", url, token: unbound)], "dpop_binding_mismatch"),
            dpop("tokenOfAnotherKey", token: boundToOther, proofs: [client.proof("GET", url, token: boundToOther)], "dpop_binding_mismatch"),
            Case(name: "boundTokenAsBearer", path: "/v1/orders", token: token, expected: .local(status: 401, reason: "bearer_downgrade")),
            // A confirmation claim that does not parse binds to nothing: refused, never taken as unbound.
            Case(name: "cnfNotAnObject", path: "/v1/orders", token: TestSigner.ec.token(claims: Claims.valid(extra: ["cnf": .string("x")])),
                 expected: .local(status: 401, reason: "invalid_claims")),
            Case(name: "jktNotAString", path: "/v1/orders", token: TestSigner.ec.token(claims: Claims.valid(extra: ["cnf": .object(["jkt": .number("5")])])),
                 expected: .local(status: 401, reason: "invalid_claims")),
            Case(name: "bearerOnRequiredRoute", path: "/dpop-only/x", token: TestSigner.ec.token(claims: Claims.valid()),
                 expected: .local(status: 401, reason: "dpop_required")),
            dpop("forwardedOnRequiredRoute", path: "/dpop-only/x", proofs: [client.proof("GET", origin + "/dpop-only/x", token: token)], nil),
            dpop("dpopOnOffRoute", path: "/bearer-only/x", proofs: [client.proof("GET", origin + "/bearer-only/x", token: token)],
                 "invalid_dpop_proof"),
            Case(name: "check", path: "/.gatehouse/check",
                 headers: [("x-forwarded-uri", "/v1/orders"), ("authorization", "DPoP \(token)"), ("dpop", client.proof("GET", url, token: token))],
                 expected: .local(status: 200, reason: nil)),
            Case(name: "checkWithoutProof", path: "/.gatehouse/check", headers: [("x-forwarded-uri", "/v1/orders"), ("authorization", "DPoP \(token)")],
                 expected: .local(status: 401, reason: "invalid_dpop_proof")),
        ]
    }

    @Test func everyCheckOfAProofHoldsThroughTheCoreAndBothDoors() async throws {
        try await TestEnvironment.run(configure: Self.configure) { env in
            let client = TestDPoPKey()
            for door in FrontDoorTableTests.Door.allCases {
                let cases = Self.cases(env, client: client)
                let outcomes = try await FrontDoorTableTests.run(cases, through: door, env)
                for testCase in cases {
                    let outcome = try #require(outcomes[testCase.name], "\(door) gave no outcome for \(testCase.name)")
                    FrontDoorTableTests.check(outcome, of: testCase, door: door, env: env)
                }
            }
            // A refusal after the token verified names its subject (the token is authentic; the sender is not).
            let line = try #require(env.failureLog.first { $0["request_id"] == .string("http1-signedByAnotherKey") })
            #expect(line["sub"] == .string("user-1"))
            #expect(line["provider"] == .string("test"))
        }
    }

    @Test(arguments: [UpstreamProtocol.http1, .http2])
    func theUpstreamGetsABearerTokenAndTheBindingButNeverTheProof(_ upstream: UpstreamProtocol) async throws {
        try await TestEnvironment.run(upstreamHTTP2: upstream == .http2, configure: Self.configure) { env in
            let client = TestDPoPKey()
            let token = client.boundToken()
            let url = "http://127.0.0.1:\(env.port)/v1/orders"
            let response = try await env.request("/v1/orders?page=2", headers: [
                ("Authorization", "DPoP \(token)"), ("DPoP", client.proof("GET", url, token: token)),
                ("X-Auth-Cnf-Jkt", "smuggled"), ("X_Auth_Cnf_Jkt", "smuggled"),
            ])
            #expect(response.status == 200)
            let received = try #require(env.upstream.last)
            #expect(received.value("authorization") == "Bearer \(token)")
            #expect(received.value("dpop") == nil)
            #expect(received.values("x-auth-cnf-jkt") == [client.thumbprint])
            #expect(received.value("x_auth_cnf_jkt") == nil)
            #expect(received.value("x-auth-subject") == "user-1")
            #expect(env.failureLog.isEmpty)
        }
    }

    @Test func refusalsCarryTheDPoPChallengeAndBearerWhereBearerIsAccepted() async throws {
        try await TestEnvironment.run(configure: Self.configure) { env in
            let client = TestDPoPKey()
            let token = client.boundToken()
            let noProof = try await env.request("/v1/orders", headers: [("Authorization", "DPoP \(token)")])
            #expect(noProof.status == 401)
            #expect(noProof.json?["error"] == .string("invalid_dpop_proof"))
            let challenges = noProof.headers["www-authenticate"]
            #expect(challenges.count == 2, "\(challenges)")
            #expect(challenges.first?.hasPrefix("DPoP algs=\"ES256 ES384 ES512 PS256 PS384 PS512 RS256 RS384 RS512 EdDSA\", "
                + "error=\"invalid_dpop_proof\", error_description=\"") == true, "\(challenges)")
            #expect(challenges.last == "Bearer realm=\"gatehouse\"")
            #expect(noProof.headers["dpop-nonce"].isEmpty)

            let downgrade = try await env.request("/v1/orders", token: token)
            #expect(downgrade.json?["reason"] == .string("bearer_downgrade"))
            #expect(downgrade.headers["www-authenticate"].first?.contains("error=\"invalid_token\"") == true)

            let missing = try await env.request("/dpop-only/x")
            #expect(missing.json?["reason"] == .string("missing_token"))
            #expect(missing.headers["www-authenticate"] == ["DPoP algs=\"ES256 ES384 ES512 PS256 PS384 PS512 RS256 RS384 RS512 EdDSA\""])

            // Where DPoP plays no part, the bearer answer is unchanged.
            let plain = try await env.request("/v1/orders")
            #expect(plain.headers["www-authenticate"] == ["Bearer realm=\"gatehouse\""])
        }
    }

    @Test func aProofIsGoodOnceAndEachRequestOnAConnectionNeedsItsOwn() async throws {
        try await TestEnvironment.run(configure: Self.configure) { env in
            let client = TestDPoPKey()
            let token = client.boundToken()
            let url = "http://127.0.0.1:\(env.port)/v1/orders"
            let proof = client.proof("GET", url, token: token)
            let headers = [("Authorization", "DPoP \(token)"), ("DPoP", proof)]
            #expect(try await env.request("/v1/orders", headers: headers).status == 200)
            let replayed = try await env.request("/v1/orders", headers: headers)
            #expect(replayed.status == 401)
            #expect(replayed.json?["reason"] == .string("dpop_replay"))
            #expect(replayed.json?["error"] == .string("invalid_dpop_proof"))
            // The same connection's token memory does not stand in for a proof.
            let bare = try await env.request("/v1/orders", headers: [("Authorization", "DPoP \(token)")])
            #expect(bare.json?["reason"] == .string("invalid_dpop_proof"))
            // Over HTTP/2 the replay is refused by the same core.
            let answers = try await HTTP2IntakeTests.send([HTTP2IntakeTests.Sent(
                name: "replay", headers: HTTP2IntakeTests.block(env, path: "/v1/orders") + [("authorization", "DPoP \(token)"), ("dpop", proof)])],
                to: env)
            #expect(answers["replay"]?.json?["reason"] == .string("dpop_replay"))
            let reasons = env.failureLog.compactMap { $0["reason"]?.stringValue }
            #expect(reasons == ["dpop_replay", "invalid_dpop_proof", "dpop_replay"])
            #expect(env.upstream.requests.count == 1)
            let metrics = MetricsText(try await env.admin("/metrics").body)
            #expect(metrics.value("gatehouse_dpop_replay_entries", [:]) == 1, "\(metrics.text)")
            #expect(metrics.value("gatehouse_auth_failures_total", ["reason": "dpop_replay", "provider": "test"]) == 2, "\(metrics.text)")
        }
    }

    @Test func aGRPCCallWithABadProofGetsUnauthenticatedWithTheReason() async throws {
        try await TestEnvironment.run(upstreamHTTP2: true, configure: Self.configure) { env in
            let token = TestDPoPKey().boundToken()
            let answers = try await HTTP2IntakeTests.send([HTTP2IntakeTests.Sent(
                name: "grpc", headers: HTTP2IntakeTests.block(env, method: "POST", path: "/orders.Orders/Get")
                    + [("content-type", "application/grpc"), ("te", "trailers"), ("authorization", "DPoP \(token)")])], to: env)
            let answer = try #require(answers["grpc"])
            #expect(answer.value("grpc-status") == "16", "\(answer)")
            #expect(answer.value("grpc-message")?.hasPrefix("invalid_dpop_proof") == true, "\(answer)")
            #expect(env.failureLog.first?["reason"] == .string("invalid_dpop_proof"))
        }
    }

    static let nonceSecret = "a nonce secret of at least 32 bytes, shared by replicas"

    @Test func withNoncesAProofWithoutTheServersNonceGetsUseDPoPNonceAndAFreshOne() async throws {
        try await TestEnvironment.run(configure: { configuration, jwks in
            Self.configure(&configuration, jwks)
            configuration.dpop.nonce = true
            configuration.dpop.nonceSecret = .inline(Self.nonceSecret)
        }) { env in
            let client = TestDPoPKey()
            let token = client.boundToken()
            let url = "http://127.0.0.1:\(env.port)/v1/orders"
            func send(nonce: String?) async throws -> TestEnvironment.Response {
                try await env.request("/v1/orders", headers: [("Authorization", "DPoP \(token)"), ("DPoP", client.proof("GET", url, token: token, nonce: nonce))])
            }
            let first = try await send(nonce: nil)
            #expect(first.status == 401)
            #expect(first.json?["reason"] == .string("use_dpop_nonce"))
            #expect(first.json?["error"] == .string("use_dpop_nonce"))
            #expect(first.headers["www-authenticate"].first?.contains("error=\"use_dpop_nonce\"") == true)
            let nonce = try #require(first.headers.first(name: "dpop-nonce"))
            #expect(try await send(nonce: nonce).status == 200)

            let now = Int64(Date().timeIntervalSince1970)
            let expired = DPoPNonces(secret: Array(Self.nonceSecret.utf8), lifetime: 300).issue(now: now - 301)
            let stale = try await send(nonce: expired)
            #expect(stale.json?["reason"] == .string("use_dpop_nonce"))
            #expect(stale.headers.first(name: "dpop-nonce") != nil)
            let foreign = DPoPNonces(secret: Array("another secret of at least 32 bytes, elsewhere".utf8), lifetime: 300).issue(now: now)
            #expect(try await send(nonce: foreign).json?["reason"] == .string("use_dpop_nonce"))
            #expect(env.failureLog.compactMap { $0["reason"]?.stringValue } == ["use_dpop_nonce", "use_dpop_nonce", "use_dpop_nonce"])
        }
    }

    @Test func aProofReplayedToTheOtherReplicaIsRefusedThroughPostgreSQL() async throws {
        try await TestPostgres.with { postgres in
            try await Self.expectReplaysRefusedAcrossReplicas(store: postgres.url)
        }
    }

    /// With PostgreSQL stopped a proof cannot be checked against the fleet: 503 `dpop_unavailable` with
    /// `Retry-After` (never a skipped check), while bearer tokens are judged as before; once it is back,
    /// proofs pass again.
    @Test func aReplayCheckThatCannotBeMadeIs503NotSkipped() async throws {
        try await TestPostgres.with { postgres in
            try await TestEnvironment.run(configure: { configuration, jwks in
                Self.configure(&configuration, jwks)
                var revocation = RevocationSettings()
                revocation.store = postgres.url
                configuration.revocation = revocation
            }) { (env: TestEnvironment) async throws in
                let client = TestDPoPKey()
                let token = client.boundToken()
                let url = "http://127.0.0.1:\(env.port)/v1/orders"
                func send() async throws -> TestEnvironment.Response {
                    try await env.request("/v1/orders", headers: [("Authorization", "DPoP \(token)"), ("DPoP", client.proof("GET", url, token: token))])
                }
                #expect(try await send().status == 200)
                try postgres.stop()
                let refused = try await send()
                #expect(refused.status == 503, "\(refused)")
                #expect(refused.json?["reason"] == .string("dpop_unavailable"))
                #expect(refused.headers.first(name: "retry-after") == "5")
                #expect(try await env.request("/v1/orders", token: TestSigner.ec.token(claims: Claims.valid())).status == 200)
                try postgres.start()
                #expect(await Contract.eventually(timeout: .seconds(15)) { (try? await send().status) == 200 })
                #expect(env.failureLog.contains { $0["reason"] == .string("dpop_unavailable") && $0["status"] == .number("503") })
            }
        }
    }

    /// Two replicas on one machine sharing the SQLite file.
    @Test func aProofReplayedToTheOtherReplicaIsRefusedThroughSQLite() async throws {
        let directory = NSTemporaryDirectory() + "gatehouse-dpop-sqlite-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await Self.expectReplaysRefusedAcrossReplicas(store: "sqlite:\(directory)/revocations.db")
    }

    static func expectReplaysRefusedAcrossReplicas(store: String) async throws {
        try await TestEnvironment.run(configure: { configuration, jwks in
            Self.configure(&configuration, jwks)
            var revocation = RevocationSettings()
            revocation.store = store
            configuration.revocation = revocation
            configuration.dpop.externalURL = "https://api.example.test"
        }) { (env: TestEnvironment) async throws in
            try await env.withReplica { replica in
                let portB = try #require(replica.proxyAddress?.port)
                let client = TestDPoPKey()
                let token = client.boundToken()
                // One proof for a URL both replicas answer at (the external URL of a load balancer in front).
                for round in 0..<3 {
                    let proof = client.proof("GET", "https://api.example.test/v1/orders", token: token)
                    let headers = [("Authorization", "DPoP \(token)"), ("DPoP", proof)]
                    let (first, second) = round % 2 == 0 ? (env.port, portB) : (portB, env.port)
                    #expect(try await env.request("/v1/orders", headers: headers, port: first).status == 200, "\(store)")
                    let replayed = try await env.request("/v1/orders", headers: headers, port: second)
                    #expect(replayed.status == 401, "\(store)")
                    #expect(replayed.json?["reason"] == .string("dpop_replay"), "\(store)")
                }
            }
        }
    }

    /// Interoperability with a DPoP client written elsewhere: Python's requests-oauth2client (its `DPoPToken`
    /// auth handler) calls through Gatehouse to the echo upstream, a fresh proof per request; with nonces on,
    /// it picks up the `DPoP-Nonce` of the 401 and retries by itself.
    @Test(arguments: [false, true])
    func requestsOAuth2ClientCallsThroughGatehouse(nonces: Bool) async throws {
        try await TestEnvironment.run(configure: { configuration, jwks in
            Self.configure(&configuration, jwks)
            configuration.dpop.nonce = nonces
        }) { (env: TestEnvironment) async throws in
            let client = TestDPoPKey()
            let token = client.boundToken()
            let output = try await PythonPeer.runJSON("dpop", "dpop_client.py", [
                "--base", "http://127.0.0.1:\(env.port)", "--jwk", client.privateJWK, "--token", token,
            ])
            // Its library's RFC 7638 thumbprint is the one the token is bound to.
            #expect(output["thumbprint"] == .string(client.thumbprint))
            let results = try #require(output["results"]?.arrayValue)
            #expect(results.count == 3)
            for result in results {
                #expect(result.objectValue?["status"] == .number("200"), "\(result)")
            }
            let received = env.upstream.requests.filter { $0.uri.hasPrefix("/v1/orders") }
            #expect(received.count == 3)
            #expect(received.allSatisfy { $0.value("authorization") == "Bearer \(token)" && $0.value("dpop") == nil })
            #expect(received.allSatisfy { $0.value("x-auth-cnf-jkt") == client.thumbprint })
            let reasons = env.failureLog.compactMap { $0["reason"]?.stringValue }
            #expect(reasons == (nonces ? ["use_dpop_nonce"] : []))
        }
    }
}
