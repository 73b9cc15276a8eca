import Foundation
@testable import Gatehouse
import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import Testing
import GatehouseSyntax
import GatehouseConfig
import GatehouseAuth
import GatehouseExchange
import GatehouseProxy
@testable import GatehouseExtAuthz

/// Gatehouse as the authorizer Envoy calls (`[ext_authz]`): raw Check calls with Envoy's own API classes
/// (Resources/extauthz/check_client.py: PyPI xds-protos and grpcio), answered by the same request core as the
/// doors (docs/reference.md §14; docs/security.md §20).
@Suite(.serialized, .timeLimit(.minutes(3)))
struct ExtAuthzTests {
    static func token() -> String { TestSigner.ec.token(claims: Claims.valid()) }

    static func run(configure: @escaping (inout Configuration) -> Void = { _ in }, _ body: (TestEnvironment, Int) async throws -> Void)
        async throws
    {
        try await TestEnvironment.run(configure: { configuration, _ in
            configuration.extAuthz = ExtAuthzSettings(address: SocketAddressSetting(host: "127.0.0.1", port: 0))
            configure(&configuration)
        }) { env in
            let port = try #require(env.gatehouse.extAuthzAddress?.port)
            try await body(env, port)
        }
    }

    /// One raw call's answer, as check_client.py read it.
    struct Answer: CustomStringConvertible {
        let object: [String: JSONValue]
        var code: Int? { object["code"]?.integerValue.map { Int($0) } }
        var allowed: Bool? { object["allowed"]?.boolValue }
        var deniedStatus: Int? { object["denied_status"]?.integerValue.map { Int($0) } }
        var body: String { object["body"]?.stringValue ?? "" }
        var reason: String? { (try? StrictJSON.parse(Array(body.utf8)).objectValue)?["reason"]?.stringValue }
        var headers: [(String, String, Int)] {
            (object["headers"]?.arrayValue ?? []).compactMap { item in
                guard let parts = item.arrayValue, parts.count == 3, let name = parts[0].stringValue, let value = parts[1].stringValue,
                      let action = parts[2].integerValue else { return nil }
                return (name, value, Int(action))
            }
        }
        func values(_ name: String) -> [String] { headers.filter { $0.0.lowercased() == name }.map(\.1) }
        var remove: [String] { (object["remove"]?.arrayValue ?? []).compactMap(\.stringValue) }
        var metadata: [String: JSONValue] { object["metadata"]?.objectValue?["gatehouse"]?.objectValue ?? [:] }
        var description: String { JSONValue.object(object).compactJSON }
    }

    static func call(_ port: Int, _ plan: [JSONValue], tls: [String] = []) async throws -> [String: Answer] {
        let planFile = FileManager.default.temporaryDirectory.appendingPathComponent("check-plan-\(UUID().uuidString).json")
        try JSONValue.array(plan).compactJSON.write(to: planFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: planFile) }
        let report = try await PythonPeer.runJSON("extauthz", "check_client.py", ["--port", String(port), "--plan", "@" + planFile.path] + tls)
        return (report["calls"]?.objectValue ?? [:]).mapValues { Answer(object: $0.objectValue ?? [:]) }
    }

    static func check(_ name: String, method: String = "GET", path: String = "/v1/orders", authority: String = "api.test",
                      headers: [(String, String)], source: String = "203.0.113.7", extra: [String: JSONValue] = [:]) -> JSONValue {
        var spec: [String: JSONValue] = [
            "method": .string(method), "path": .string(path), "host": .string(authority), "source": .string(source),
            "headers": .array(([(":method", method), (":path", path), (":authority", authority), (":scheme", "http")] + headers)
                .map { .array([.string($0.0), .string($0.1)]) }),
        ]
        for (key, value) in extra { spec[key] = value }
        return .object(["name": .string(name), "check": .object(spec)])
    }

    @Test func aValidTokenIsAllowedWithTheIdentityAndTheClientsSpellingsRemoved() async throws {
        try await Self.run { env, port in
            let answers = try await Self.call(port, [
                Self.check("valid", headers: [
                    ("authorization", "Bearer \(Self.token())"), ("x-auth-subject", "mallory"), ("x_auth_subject", "mallory"),
                    ("x-auth-email", "mallory@evil.example"), ("x-request-id", "envoy-request-1"),
                ]),
            ])
            let valid = try #require(answers["valid"])
            #expect(valid.code == 0 && valid.allowed == true, "\(valid)")
            #expect(valid.values("x-auth-subject") == ["user-1"], "\(valid)")
            #expect(valid.headers.filter { $0.0.hasPrefix("x-auth-") }.allSatisfy { $0.2 == 2 }, "OVERWRITE_IF_EXISTS_OR_ADD: \(valid)")
            // The spelling Gatehouse sets is overwritten, never removed (Envoy removes after it sets); every other
            // spelling the client sent, and every identity header Gatehouse could set and did not, is removed.
            let set = Set(valid.headers.map { $0.0 })
            #expect(valid.remove.contains("x_auth_subject") && !valid.remove.contains("x-auth-subject"), "\(valid)")
            #expect(Set(valid.remove).isDisjoint(with: set), "\(valid)")
            for name in ["x-auth-guest", "x-auth-cnf-jkt", "x-auth-cnf-x5t-s256", "x-auth-email"] {
                #expect(set.contains(name) || valid.remove.contains(name), "\(name) neither set nor removed: \(valid)")
            }
            #expect(valid.metadata["sub"] == .string("user-1") && valid.metadata["provider"] == .string("test"), "\(valid)")
            #expect(valid.metadata["iss"] == .string(Claims.issuer))
            try await env.expectNothingReachedUpstream()
            #expect(env.failureLog.isEmpty)
        }
    }

    @Test func aRefusalIsTheDoorsAnswerAndOneFailureLogLineWithTheClientsAddress() async throws {
        try await Self.run { env, port in
            let forged = String(Self.token().dropLast(8)) + "AAAAAAAA"
            let answers = try await Self.call(port, [
                Self.check("missing", headers: [("x-request-id", "envoy-request-2")]),
                Self.check("forged", headers: [("authorization", "Bearer \(forged)")], source: "198.51.100.9"),
                Self.check("own", path: "/.gatehouse/check", headers: [("authorization", "Bearer \(Self.token())")]),
                Self.check("two", headers: [("authorization", "Bearer \(Self.token()),Bearer \(Self.token())")]),
                Self.check("authority", headers: [("host", "evil.example"), ("authorization", "Bearer \(Self.token())")]),
            ])
            let missing = try #require(answers["missing"])
            #expect(missing.code == 0 && missing.allowed == false && missing.deniedStatus == 401, "\(missing)")
            #expect(missing.reason == "missing_token", "\(missing)")
            #expect(missing.values("www-authenticate").first?.hasPrefix("Bearer") == true, "\(missing)")
            #expect(missing.values("x-request-id") == ["envoy-request-2"], "\(missing)")
            let forgedAnswer = try #require(answers["forged"])
            #expect(forgedAnswer.deniedStatus == 401 && forgedAnswer.reason == "bad_signature", "\(forgedAnswer)")
            #expect(answers["own"]?.deniedStatus == 404, "\(String(describing: answers["own"]))")
            #expect(answers["two"]?.deniedStatus == 400 || answers["two"]?.deniedStatus == 401, "\(String(describing: answers["two"]))")
            #expect(answers["authority"]?.deniedStatus == 400, "\(String(describing: answers["authority"]))")

            let lines = env.failureLog
            let missingLine = try #require(lines.first { $0["reason"] == .string("missing_token") }, "\(env.failureLogLines)")
            #expect(missingLine["client_ip"] == .string("203.0.113.7"))
            #expect(missingLine["request_id"] == .string("envoy-request-2"))
            #expect(missingLine["via"] == .string("ext_authz_grpc"))
            #expect(lines.contains { $0["reason"] == .string("bad_signature") && $0["client_ip"] == .string("198.51.100.9") })
            try await env.expectNothingReachedUpstream()
        }
    }

    @Test func aMalformedCheckRequestIsInvalidArgumentAndTheHealthCheckSaysReadiness() async throws {
        try await Self.run { _, port in
            let answers = try await Self.call(port, [
                .object(["name": .string("garbage"), "raw": .string("ffffffffffffffffffffff")]),
                .object(["name": .string("truncated"), "raw": .string("0a0522030a01")]),
                .object(["name": .string("empty"), "raw": .string("")]),
                .object(["name": .string("health"), "health": .string("")]),
                .object(["name": .string("healthAuthz"), "health": .string("envoy.service.auth.v3.Authorization")]),
                .object(["name": .string("healthOther"), "health": .string("other.Service")]),
                // Found by FuzzCheckRequest: a name that is not ASCII trapped in NIO's header list (the process died).
                Self.check("nonASCIIName", headers: [("x-caf\u{E9}", "1")]),
                Self.check("unknownPseudo", headers: [(":protocol", "websocket")]),
                Self.check("after", headers: []),
            ])
            for name in ["garbage", "truncated", "empty"] {
                #expect(answers[name]?.code == 3, "\(name): INVALID_ARGUMENT: \(String(describing: answers[name]))")
            }
            #expect(answers["health"]?.object["status"]?.integerValue == 1, "SERVING: \(String(describing: answers["health"]))")
            #expect(answers["healthAuthz"]?.object["status"]?.integerValue == 1)
            #expect(answers["healthOther"]?.code == 5, "NOT_FOUND: \(String(describing: answers["healthOther"]))")
            #expect(answers["nonASCIIName"]?.deniedStatus == 400, "\(String(describing: answers["nonASCIIName"]))")
            #expect(answers["unknownPseudo"]?.deniedStatus == 400, "\(String(describing: answers["unknownPseudo"]))")
            #expect(answers["after"]?.deniedStatus == 401, "the process still answers: \(String(describing: answers["after"]))")
        }
    }

    /// A Check says the request's host twice, as `attributes.request.http.host` and as the `:authority` entry of its
    /// headers; Envoy sends them equal. A Check whose two disagree is refused 400, as a door refuses a `Host` that
    /// disagrees with `:authority` (E19): the host is never read one way for one rule and another way for the next.
    /// A difference of ASCII case is the same host.
    @Test func aCheckWhoseHostAttributeDisagreesWithItsAuthorityIsRefused() async throws {
        try await Self.run { env, port in
            let authorization = ("authorization", "Bearer \(Self.token())")
            let answers = try await Self.call(port, [
                Self.check("differs", headers: [authorization], extra: ["host": .string("evil.test")]),
                Self.check("case", headers: [authorization], extra: ["host": .string("API.Test")]),
                Self.check("same", headers: [authorization]),
            ])
            #expect(answers["differs"]?.deniedStatus == 400, "\(String(describing: answers["differs"]))")
            #expect(answers["differs"]?.allowed != true)
            #expect(answers["case"]?.allowed == true, "\(String(describing: answers["case"]))")
            #expect(answers["same"]?.allowed == true, "\(String(describing: answers["same"]))")
            try await env.expectNothingReachedUpstream()
        }
    }

    /// A decision that would outlast the caller's deadline (a JWKS refetch for an unknown key that takes 3 s) is
    /// denied 503 before the deadline, never left to time out (Envoy would apply status_on_error) nor allowed.
    @Test func aDecisionThatWouldOutlastTheCallersDeadlineIsDenied503InTime() async throws {
        try await TestEnvironment.run(signers: [.rsa], configure: { configuration, _ in
            configuration.extAuthz = ExtAuthzSettings(address: SocketAddressSetting(host: "127.0.0.1", port: 0))
        }) { env in
            let port = try #require(env.gatehouse.extAuthzAddress?.port)
            let rotated = TestSigner.ec.with(keyID: "ec-rotated")
            env.jwks.update {
                $0.body = TestSigner.jwks([.rsa, rotated])
                $0.delay = .seconds(3)
            }
            let started = ContinuousClock.now
            let answers = try await Self.call(port, [
                Self.check("slow", headers: [("authorization", "Bearer \(rotated.token(claims: Claims.valid()))")],
                           extra: ["timeout": .number("0.5")]),
            ])
            let elapsed = ContinuousClock.now - started
            let slow = try #require(answers["slow"])
            #expect(slow.code == 0 && slow.deniedStatus == 503, "answered in time, not DEADLINE_EXCEEDED: \(slow)")
            #expect(slow.reason == "keys_unavailable", "\(slow)")
            #expect(!slow.values("retry-after").isEmpty, "\(slow)")
            #expect(elapsed < .seconds(2.5), "\(elapsed)")
            #expect(env.failureLog.map { $0["reason"] } == [.string("keys_unavailable")], "\(env.failureLogLines)")
        }
    }

    /// `[ext_authz]` without `[upstream]`: no client port is opened, Checks are answered, the admin port serves.
    @Test func anAuthorizerOnlyOpensNoClientPortAndAnswersChecks() async throws {
        try await Self.run(configure: { $0.servesClientPort = false }) { env, port in
            #expect(env.gatehouse.proxyAddress == nil)
            let answers = try await Self.call(port, [
                Self.check("valid", headers: [("authorization", "Bearer \(Self.token())")]),
                Self.check("missing", headers: []),
            ])
            #expect(answers["valid"]?.allowed == true, "\(String(describing: answers["valid"]))")
            #expect(answers["missing"]?.deniedStatus == 401, "\(String(describing: answers["missing"]))")
            let ready = try await env.client.execute(.init(url: "http://127.0.0.1:\(env.adminPort)/readyz"), timeout: .seconds(5))
            #expect(ready.status == .ok)
        }
    }

    /// The route is chosen from the original path by the doors' target rules (dot segments resolved, the query
    /// never consulted), and every Check is counted by protocol and result with its duration.
    @Test func theRouteComesFromTheNormalizedPathAndChecksAreCounted() async throws {
        try await Self.run(configure: { configuration in
            var open = RouteSettings(match: .prefix("/public"))
            open.auth = .public
            configuration.routes = [open]
        }) { env, port in
            let answers = try await Self.call(port, [
                Self.check("public", path: "/public/page", headers: []),
                Self.check("dots", path: "/public/../admin", headers: []),
                Self.check("encoded", path: "/public/%2e%2e/admin", headers: []),
                Self.check("query", path: "/admin?/public", headers: []),
                .object(["name": .string("garbage"), "raw": .string("ff")]),
            ])
            #expect(answers["public"]?.allowed == true, "\(String(describing: answers["public"]))")
            for name in ["dots", "encoded", "query"] {
                #expect(answers[name]?.deniedStatus == 401, "\(name): \(String(describing: answers[name]))")
                #expect(answers[name]?.reason == "missing_token", "\(name): \(String(describing: answers[name]))")
            }
            let metrics = try await env.client.execute(.init(url: "http://127.0.0.1:\(env.adminPort)/metrics"), timeout: .seconds(5))
            let text = String(buffer: try await metrics.body.collect(upTo: 1 << 20))
            #expect(text.contains("gatehouse_ext_authz_checks_total{protocol=\"grpc\",result=\"allow\"} 1"), "\(text)")
            #expect(text.contains("gatehouse_ext_authz_checks_total{protocol=\"grpc\",result=\"deny\"} 3"))
            #expect(text.contains("gatehouse_ext_authz_checks_total{protocol=\"grpc\",result=\"invalid\"} 1"))
            #expect(text.contains("gatehouse_ext_authz_check_duration_seconds_count{protocol=\"grpc\"} 5"), "\(text)")
        }
    }

    /// TLS on the `[ext_authz]` port with `client_ca`: a caller with a certificate of that CA is answered; one
    /// without a certificate, or with another CA's, never gets a Check through.
    @Test func withClientCAOnlyCallersWithItsCertificatesAreAnswered() async throws {
        let files = try CertificateBoundTokenTests.Files()
        defer { try? FileManager.default.removeItem(atPath: files.directory) }
        let stranger = try CertificateBoundTokenTests.Files()
        defer { try? FileManager.default.removeItem(atPath: stranger.directory) }
        try await Self.run(configure: { configuration in
            configuration.extAuthz?.tlsCertificatePath = files.server.certificate
            configuration.extAuthz?.tlsKeyPath = files.server.key
            configuration.extAuthz?.clientCAPath = files.ca
        }) { _, port in
            let plan = [Self.check("valid", headers: [("authorization", "Bearer \(Self.token())")])]
            let trusted = try await Self.call(port, plan, tls: [
                "--tls-ca", files.server.certificate, "--cert", files.client.certificate, "--key", files.client.key,
            ])
            #expect(trusted["valid"]?.allowed == true, "\(String(describing: trusted["valid"]))")
            let anonymous = try await Self.call(port, plan, tls: ["--tls-ca", files.server.certificate])
            #expect(anonymous["valid"]?.code == 14, "UNAVAILABLE (the handshake fails): \(String(describing: anonymous["valid"]))")
            let foreign = try await Self.call(port, plan, tls: [
                "--tls-ca", files.server.certificate, "--cert", stranger.client.certificate, "--key", stranger.client.key,
            ])
            #expect(foreign["valid"]?.code == 14, "\(String(describing: foreign["valid"]))")
        }
    }

    /// Checks of one gateway connection repeating a token take the doors' fast path (`RecentToken`), which is still
    /// judged each time: another route's requirements, and a sign-out in between, refuse it.
    @Test func aTokenRepeatedOnTheGatewaysConnectionIsStillJudgedEachTime() async throws {
        try await Self.run(configure: { configuration in
            var admin = RouteSettings(match: .prefix("/admin"))
            admin.scopes = ["admin"]
            configuration.routes = [admin]
            configuration.verification.cacheSize = 0  // no shared cache: a hit can only be the connection's fast path
        }) { env, port in
            let token = TestSigner.ec.token(claims: Claims.valid(extra: ["jti": .string("repeated-on-the-connection")]))
            let authorization = [("authorization", "Bearer \(token)")]
            let answers = try await Self.call(port, [
                Self.check("first", headers: authorization),
                Self.check("again", headers: authorization),
                Self.check("admin", path: "/admin/users", headers: authorization),
                .object(["name": .string("signout"), "signout": .object([
                    "url": .string("http://127.0.0.1:\(env.port)/.gatehouse/signout"), "token": .string(token),
                ])]),
                Self.check("afterSignOut", headers: authorization),
            ])
            #expect(answers["first"]?.allowed == true && answers["again"]?.allowed == true, "\(answers)")
            #expect(answers["admin"]?.deniedStatus == 403 && answers["admin"]?.reason == "insufficient_scope", "\(String(describing: answers["admin"]))")
            #expect(answers["signout"]?.object["status"]?.integerValue == 200)
            #expect(answers["afterSignOut"]?.deniedStatus == 401 && answers["afterSignOut"]?.reason == "revoked",
                    "\(String(describing: answers["afterSignOut"]))")
            // Verified twice (the first Check, and the sign-out on another connection); the three later Checks of
            // the gateway's connection took the token it remembered, and were still refused where they had to be.
            let counts = try await VerifyCacheCounts.read(env)
            #expect(counts.misses == 2 && counts.hits == 3, "\(counts)")
        }
    }

    /// Found in review: a caller's timeout near Int64's range overflowed the deadline arithmetic (a trap: the process
    /// died), and a request of the HTTP protocol with gRPC's content-type got a gRPC answer, HTTP 200, which
    /// Envoy's HTTP protocol reads as "allow".
    @Test func hostileTimeoutsAndGRPCLookalikesOnTheHTTPProtocolAreJudgedNotAllowed() async throws {
        try await Self.run { env, port in
            for timeout in ["9223372036854775807", "2305843009214", "-2305843009214"] {
                let raw = RawHTTP.exchange(port: port, "GET /v1/orders HTTP/1.1\r\nHost: api.test\r\n"
                    + "x-envoy-expected-rq-timeout-ms: \(timeout)\r\nConnection: close\r\n\r\n")
                #expect(RawHTTP.statuses(raw) == [401], "timeout \(timeout): \(raw.prefix(200))")
            }
            for path in [ExtAuthzResponder.checkMethod, ExtAuthzResponder.healthMethod, "/some.Service/Method"] {
                let raw = RawHTTP.exchange(port: port, "POST \(path) HTTP/1.1\r\nHost: api.test\r\nContent-Type: application/grpc\r\n"
                    + "TE: trailers\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                #expect(RawHTTP.statuses(raw) == [401], "\(path) over the HTTP protocol: \(raw.prefix(300))")
            }
            // A client's X-Forwarded-For is no ground for trust: the caller is the connection's peer.
            let forwarded = RawHTTP.exchange(port: port, "GET /v1/xff HTTP/1.1\r\nHost: api.test\r\nX-Forwarded-For: 10.9.9.9\r\n"
                + "X-Request-Id: xff-check\r\nConnection: close\r\n\r\n")
            #expect(RawHTTP.statuses(forwarded) == [401])
            #expect(env.failureLog.first { $0["request_id"] == .string("xff-check") }?["client_ip"] == .string("127.0.0.1"), "\(env.failureLogLines)")
            // The gRPC calls themselves still work, and the process is alive.
            let answers = try await Self.call(port, [.object(["name": .string("health"), "health": .string("")])])
            #expect(answers["health"]?.object["status"]?.integerValue == 1)
            #expect(env.upstream.requestCount == 0)
        }
    }

    /// Found in review: a caller that stalls mid-request held a stream (HTTP/2) or a connection (HTTP/1.1) of the
    /// ext_authz port for ever. Both are given up after `idle_timeout`.
    @Test func aCallerThatStallsMidRequestIsCutAfterTheIdleTimeout() async throws {
        try await Self.run(configure: { $0.listen.idleTimeout = .seconds(1) }) { _, port in
            let started = ContinuousClock.now
            let raw = RawHTTP.exchange(port: port, "GET /v1/orders HTTP/1.1\r\nHost: api.test\r\n", timeout: .seconds(6))
            let elapsed = ContinuousClock.now - started
            #expect(RawHTTP.statuses(raw).isEmpty && elapsed < .seconds(4), "HTTP/1.1 closed after \(elapsed): \(raw)")

            // HTTP/2: a Check's HEADERS without END_STREAM, then nothing (requests.py against the ext_authz port).
            let headers: [(String, String)] = [(":method", "POST"), (":scheme", "http"), (":authority", "gatehouse"),
                                               (":path", ExtAuthzResponder.checkMethod), ("content-type", "application/grpc"),
                                               ("te", "trailers")]
            let plan = JSONValue.array([.object([
                "name": .string("stalled"), "open": .bool(true),
                "headers": .array(headers.map { .array([.string($0.0), .string($0.1)]) }),
            ])])
            let planFile = FileManager.default.temporaryDirectory.appendingPathComponent("stall-\(UUID().uuidString).json")
            try plan.compactJSON.write(to: planFile, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(at: planFile) }
            let report = try await PythonPeer.runJSON("h2", "requests.py", ["--port", String(port), "--plan", "@" + planFile.path])
            let stalled = report["requests"]?.objectValue?["stalled"]?.objectValue ?? [:]
            #expect(stalled["rst_code"]?.integerValue == 8, "reset (CANCEL) after the idle timeout: \(report)")
        }
    }

    /// The port reads an HTTP/2 request's head by the client port's rules (`HTTP2RequestHeadReader`; NIO's own
    /// validation is off on both): what RFC 9113 makes malformed resets the stream, what the doors refuse is a 400,
    /// for the HTTP protocol and for a gRPC call alike.
    @Test func anHTTP2RequestHeadIsReadByTheClientPortsRules() async throws {
        try await Self.run { env, port in
            func http(_ extra: [(String, String)], authority: String = "api.test") -> [(String, String)] {
                [(":method", "GET"), (":scheme", "http"), (":authority", authority), (":path", "/v1/orders")] + extra
            }
            let call: [(String, String)] = [
                (":method", "POST"), (":scheme", "http"), (":authority", "gatehouse"), (":path", ExtAuthzResponder.healthMethod),
                ("content-type", "application/grpc"), ("te", "trailers"),
            ]
            let answers = try await HTTP2IntakeTests.send([
                .init(name: "no-token", headers: http([])),
                .init(name: "te-any-case", headers: http([("te", "Trailers")])),
                .init(name: "host-differs", headers: http([("host", "evil.test")])),
                .init(name: "padded-value", headers: http([("x-note", " padded")])),
                .init(name: "connection-specific", headers: http([("connection", "close")])),
                .init(name: "upper-case-name", headers: http([("X-Note", "a")])),
                .init(name: "pseudo-after-regular", headers: [(":method", "GET"), (":scheme", "http"), ("accept", "*/*"), (":path", "/v1/orders")]),
                .init(name: "call-padded-value", headers: call + [("grpc-timeout", "1S ")], body: "\u{0}\u{0}\u{0}\u{0}\u{0}"),
                .init(name: "call", headers: call, body: "\u{0}\u{0}\u{0}\u{0}\u{0}"),
            ], to: env, port: port)
            // The HTTP protocol's denial of a request without a token; `te: Trailers` as on the client port.
            #expect(answers["no-token"]?.status == 401, "\(String(describing: answers["no-token"]))")
            #expect(answers["te-any-case"]?.status == 401, "\(String(describing: answers["te-any-case"]))")
            for name in ["host-differs", "padded-value", "call-padded-value"] {
                HTTP2IntakeTests.expectRefusedAtIntake(answers[name], name)
            }
            #expect(answers["host-differs"]?.body.contains(":authority and host differ") == true, "\(String(describing: answers["host-differs"]))")
            for name in ["connection-specific", "upper-case-name", "pseudo-after-regular"] {
                #expect(answers[name]?.resetCode == 1 && answers[name]?.status == nil, "\(name): \(String(describing: answers[name]))")
            }
            #expect(answers["call"]?.status == 200 && answers["call"]?.value("grpc-status") == "0", "\(String(describing: answers["call"]))")
            #expect(env.upstream.requestCount == 0)
        }
    }

    /// The Check judges RSA tokens on the prepared keys (`PreparedRSAKey`) as the doors do: an RS256 token of the
    /// provider's key allowed; a genuine PS256 signature by that key denied `unsupported_algorithm`, since the JWK says
    /// RS256 (J19); a signature with one character changed denied `bad_signature`, and the same forgery again too (from
    /// the rejected-token cache).
    @Test func rsaTokensAreJudgedOnTheCheckAsOnTheDoors() async throws {
        try await Self.run { _, port in
            let rs256 = TestSigner.rsa.token(claims: Claims.valid())
            let ps256 = TestSigner.rsaPSS.token(claims: Claims.valid())
            var forged = Array(rs256.utf8)
            forged[forged.count - 10] = forged[forged.count - 10] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
            let forgedToken = String(decoding: forged, as: UTF8.self)
            let answers = try await Self.call(port, [
                Self.check("rs256", headers: [("authorization", "Bearer \(rs256)")]),
                Self.check("ps256", headers: [("authorization", "Bearer \(ps256)")]),
                Self.check("forged", headers: [("authorization", "Bearer \(forgedToken)")]),
                Self.check("forged-again", headers: [("authorization", "Bearer \(forgedToken)")]),
            ])
            let allowed = try #require(answers["rs256"])
            #expect(allowed.code == 0 && allowed.allowed == true && allowed.values("x-auth-subject") == ["user-1"], "\(allowed)")
            let pss = try #require(answers["ps256"])
            #expect(pss.deniedStatus == 401 && pss.reason == "unsupported_algorithm", "\(pss)")
            for name in ["forged", "forged-again"] {
                let answer = try #require(answers[name])
                #expect(answer.deniedStatus == 401 && answer.reason == "bad_signature", "\(name): \(answer)")
            }
        }
    }

    /// H18 on the ext_authz port: DATA that does not add up to the request's `content-length` (more, fewer, or any with
    /// `content-length: 0`) makes it malformed (RFC 9113 §8.1.1), as on the client port: the stream is reset
    /// (PROTOCOL_ERROR), never answered. The same call with its true length is answered.
    @Test func aCallWhoseDataDoesNotMatchItsContentLengthIsReset() async throws {
        try await Self.run { env, port in
            let call: [(String, String)] = [
                (":method", "POST"), (":scheme", "http"), (":authority", "gatehouse"), (":path", ExtAuthzResponder.healthMethod),
                ("content-type", "application/grpc"), ("te", "trailers"),
            ]
            let message = "\u{0}\u{0}\u{0}\u{0}\u{0}"
            let answers = try await HTTP2IntakeTests.send([
                .init(name: "cl-short", headers: call + [("content-length", "3")], body: message),
                .init(name: "cl-long", headers: call + [("content-length", "9")], body: message),
                .init(name: "cl-zero-with-body", headers: call + [("content-length", "0")], body: message),
                .init(name: "cl-true", headers: call + [("content-length", "5")], body: message),
            ], to: env, port: port)
            for name in ["cl-short", "cl-long", "cl-zero-with-body"] {
                #expect(answers[name]?.resetCode == 1 && answers[name]?.status == nil, "\(name): \(String(describing: answers[name]))")
            }
            #expect(answers["cl-true"]?.status == 200 && answers["cl-true"]?.value("grpc-status") == "0", "\(String(describing: answers["cl-true"]))")
        }
    }

    /// `[ext_authz] forward_token = false`: an allow removes the token from the request (an authorizer only has no
    /// `[upstream]` to say it); unset, `[upstream] forward_token` decides (true by default). Applied on reload.
    @Test func forwardTokenFalseRemovesTheTokenFromAnAllowedRequest() async throws {
        try await Self.run(configure: { $0.extAuthz?.forwardToken = false }) { env, port in
            func removesToken(_ name: String) async throws -> Bool {
                let answers = try await Self.call(port, [Self.check(name, headers: [("authorization", "Bearer \(Self.token())")])])
                let answer = try #require(answers[name])
                #expect(answer.allowed == true, "\(answer)")
                return answer.remove.contains("authorization")
            }
            let withheld = try await removesToken("withheld")
            #expect(withheld)
            var unset = env.gatehouse.configuration
            unset.extAuthz?.forwardToken = nil
            #expect(await env.gatehouse.reload(unset).isEmpty, "forward_token needs no restart")
            let kept = try await removesToken("kept")
            #expect(!kept)
            var upstreamSaysNo = unset
            upstreamSaysNo.upstream.forwardToken = false
            #expect(await env.gatehouse.reload(upstreamSaysNo).isEmpty)
            let asUpstream = try await removesToken("as-upstream")
            #expect(asUpstream)
        }
    }
}
