import Foundation
@testable import Gatehouse
import NIOHTTP1
import Testing

/// What an HTTP/2-to-HTTP/1.1 proxy must refuse or rewrite at intake, and the rules both front doors
/// share (docs/security.md H11-H16, P53): requests sent with raw frames (Resources/h2/requests.py),
/// each on every upstream protocol, and over HTTP/1.1 where the same rule applies.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct HTTP2IntakeTests {
    struct Sent {
        var name: String
        var headers: [(String, String)]
        var body: String?
        var trailers: [(String, String)]?
    }

    struct Answer: CustomStringConvertible {
        var status: Int?
        var headers: [(String, String)]
        var body: String
        var ended: Bool
        var resetCode: Int?

        func value(_ name: String) -> String? { headers.first { $0.0 == name }?.1 }
        var json: [String: JSONValue]? { try? StrictJSON.parse(Array(body.utf8)).objectValue }
        var description: String { "status \(status.map(String.init) ?? "none"), reset \(resetCode.map(String.init) ?? "none"), \(headers), \(body)" }
    }

    static let upstreamProtocols = [UpstreamProtocol.http1, .http2]

    static func token() -> String { TestSigner.ec.token(claims: Claims.valid()) }

    /// A request's header block: the four pseudo-header fields (those given as nil left out), then `extra`.
    static func block(
        _ env: TestEnvironment, method: String = "GET", path: String = "/v1/orders", authority: String?? = .none, token: String? = nil,
        _ extra: [(String, String)] = []
    ) -> [(String, String)] {
        var fields = [(":method", method), (":scheme", "http")]
        switch authority {
        case .none: fields.append((":authority", "127.0.0.1:\(env.port)"))
        case .some(.some(let value)): fields.append((":authority", value))
        case .some(.none): break
        }
        fields.append((":path", path))
        if let token { fields.append(("authorization", "Bearer \(token)")) }
        return fields + extra
    }

    /// Sends each request on its own stream of one connection, one after the other.
    static func send(_ requests: [Sent], to env: TestEnvironment) async throws -> [String: Answer] {
        func pairs(_ fields: [(String, String)]) -> JSONValue { .array(fields.map { .array([.string($0.0), .string($0.1)]) }) }
        let plan = JSONValue.array(requests.map { request in
            var object: [String: JSONValue] = ["name": .string(request.name), "headers": pairs(request.headers)]
            if let body = request.body { object["body"] = .string(body) }
            if let trailers = request.trailers { object["trailers"] = pairs(trailers) }
            return .object(object)
        })
        let report = try await PythonPeer.runJSON("h2", "requests.py", ["--port", String(env.port), "--plan", plan.compactJSON])
        var answers: [String: Answer] = [:]
        for (name, value) in report["requests"]?.objectValue ?? [:] {
            let object = value.objectValue ?? [:]
            let headers = (object["headers"]?.arrayValue ?? []).compactMap { pair -> (String, String)? in
                guard let items = pair.arrayValue, items.count == 2, let name = items[0].stringValue, let value = items[1].stringValue else { return nil }
                return (name, value)
            }
            answers[name] = Answer(
                status: object["status"]?.integerValue.map { Int($0) }, headers: headers, body: object["body"]?.stringValue ?? "",
                ended: object["ended"]?.boolValue ?? false, resetCode: object["rst_code"]?.integerValue.map { Int($0) })
        }
        #expect(answers.count == requests.count, "requests.py answered \(answers.keys.sorted()) of \(requests.map(\.name))")
        return answers
    }

    static func run(_ upstream: UpstreamProtocol, configure: @escaping (inout Configuration) -> Void = { _ in },
                    _ body: (TestEnvironment) async throws -> Void) async throws {
        try await TestEnvironment.run(upstreamHTTP2: upstream == .http2, configure: { configuration, _ in configure(&configuration) }, body)
    }

    /// A 400 answered by Gatehouse at intake: the stream ended cleanly (not reset), nothing judged or logged.
    static func expectRefusedAtIntake(_ answer: Answer?, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(answer?.status == 400, "\(what): \(String(describing: answer))", sourceLocation: sourceLocation)
        #expect(answer?.ended == true && answer?.resetCode == nil, "\(what) must be answered, not reset: \(String(describing: answer))",
                sourceLocation: sourceLocation)
    }

    // MARK: - 1. Identity fields in request trailers (P53)

    /// Every identity spelling, the configured names, the token and what a trailer section may not carry:
    /// removed from request trailers on every path, as from the head.
    static let smuggledTrailers: [(String, String)] = [
        ("x-auth-subject", "admin"), ("x_auth_subject", "admin"), ("x-auth_email", "evil@example.com"), ("x-auth-claims", "e30"),
        ("x-auth-provider", "evil"), ("x-auth-guest", "true"), ("x-user-email", "evil@example.com"), ("x_user_email", "evil@example.com"),
        ("authorization", "Bearer forged"), ("cookie", "session=forged"), ("host", "evil.example"), ("x-forwarded-for", "10.0.0.1"),
        ("x-request-id", "forged"), ("te", "trailers"), ("x-checksum", "abc"),
    ]

    static func withConfiguredHeader(_ configuration: inout Configuration) {
        configuration.headers.mappings.append(HeaderMapping(name: "X-User-Email", claimPath: "email"))
    }

    @Test(arguments: upstreamProtocols)
    func identityFieldsInRequestTrailersNeverReachTheUpstream(_ upstream: UpstreamProtocol) async throws {
        try await Self.run(upstream, configure: Self.withConfiguredHeader) { env in
            let token = Self.token()
            let answers = try await Self.send([
                Sent(name: "h2", headers: Self.block(env, method: "POST", path: "/v1/h2-trailers", token: token), body: "hello",
                     trailers: Self.smuggledTrailers),
            ], to: env)
            #expect(answers["h2"]?.status == 200, "\(String(describing: answers["h2"]))")

            // An HTTP/1.1 client's chunked trailers (framing fields there are refused by the parser, P48).
            let trailerLines = Self.smuggledTrailers.map { "\($0.0): \($0.1)\r\n" }.joined()
            let raw = RawHTTP.exchange(port: env.port, "POST /v1/h1-trailers HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\n"
                + "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\n\(trailerLines)\r\n")
            #expect(RawHTTP.statuses(raw) == [200], "\(raw)")

            for path in ["/v1/h2-trailers", "/v1/h1-trailers"] {
                let received = try #require(env.upstream.requests.first { $0.uri == path }, "\(path) never reached the upstream")
                #expect(received.values("x-auth-subject") == ["user-1"], "\(path): \(received.headers)")
                #expect(received.bodyBytes == 5)
                // Only an HTTP/2 upstream is sent trailers at all; there, the harmless one arrives alone.
                let expected = upstream == .http2 ? [("x-checksum", "abc")] : []
                #expect(received.trailers.map { "\($0.0.lowercased()): \($0.1)" } == expected.map { "\($0.0): \($0.1)" },
                        "\(path) trailers: \(received.trailers)")
            }
        }
    }

    // MARK: - 2, 3. One Host: `:authority`, or `host` alone, never two that differ (H11, H12)

    @Test(arguments: upstreamProtocols)
    func authorityAndHostMustAgreeAndOneOfThemMustCome(_ upstream: UpstreamProtocol) async throws {
        try await Self.run(upstream) { env in
            let token = Self.token()
            let authority = "127.0.0.1:\(env.port)"
            let answers = try await Self.send([
                Sent(name: "differ", headers: Self.block(env, path: "/v1/differ", token: token, [("host", "evil.example")])),
                Sent(name: "same", headers: Self.block(env, path: "/v1/same", token: token, [("host", authority)])),
                Sent(name: "hostOnly", headers: Self.block(env, path: "/v1/host-only", authority: .some(nil), token: token,
                                                           [("host", "api.example")])),
                Sent(name: "twoHosts", headers: Self.block(env, path: "/v1/two-hosts", authority: .some(nil), token: token,
                                                           [("host", "api.example"), ("host", "evil.example")])),
                Sent(name: "neither", headers: Self.block(env, path: "/v1/neither", authority: .some(nil), token: token)),
                Sent(name: "after", headers: Self.block(env, path: "/v1/after", token: token)),
            ], to: env)
            Self.expectRefusedAtIntake(answers["differ"], ":authority and host differing")
            Self.expectRefusedAtIntake(answers["twoHosts"], "two host fields")
            Self.expectRefusedAtIntake(answers["neither"], "neither :authority nor host")
            #expect(answers["same"]?.status == 200)
            #expect(answers["hostOnly"]?.status == 200)
            #expect(answers["after"]?.status == 200, "the connection still serves: \(String(describing: answers["after"]))")
            #expect(Set(env.upstream.requests.map(\.uri)) == ["/v1/same", "/v1/host-only", "/v1/after"])
            let same = try #require(env.upstream.requests.first { $0.uri == "/v1/same" })
            #expect(same.values("host") == [authority])
            let hostOnly = try #require(env.upstream.requests.first { $0.uri == "/v1/host-only" })
            #expect(hostOnly.values("host") == ["api.example"])
            if upstream == .http1 {
                #expect(same.values("x-forwarded-host") == [authority])
                #expect(hostOnly.values("x-forwarded-host") == ["api.example"])
            }
            #expect(env.failureLog.isEmpty, "intake refusals are not authentication failures: \(env.failureLogLines)")
        }
    }

    // MARK: - 4. Cookie crumbs (H13)

    @Test(arguments: upstreamProtocols)
    func cookieCrumbsReachTheUpstreamAsOneField(_ upstream: UpstreamProtocol) async throws {
        try await Self.run(upstream, configure: { $0.verification.tokenCookie = "session" }) { env in
            let token = Self.token()
            let answers = try await Self.send([
                Sent(name: "crumbs", headers: Self.block(env, path: "/v1/crumbs", [
                    ("cookie", "a=1"), ("cookie", "session=\(token)"), ("cookie", "c=3"),
                ])),
            ], to: env)
            #expect(answers["crumbs"]?.status == 200, "the token in the second crumb: \(String(describing: answers["crumbs"]))")
            let received = try #require(env.upstream.last)
            #expect(received.values("cookie") == ["a=1; session=\(token); c=3"], "\(received.headers)")
            #expect(received.values("x-auth-subject") == ["user-1"])
        }
    }

    // MARK: - 5. gRPC refusals are an HTTP/2 form (H14)

    @Test(arguments: upstreamProtocols)
    func aRefusedHTTP1RequestWithAGRPCContentTypeGetsThePlainAnswer(_ upstream: UpstreamProtocol) async throws {
        try await Self.run(upstream) { env in
            let refused = try await env.request("/v1/orders", headers: [("Content-Type", "application/grpc")])
            #expect(refused.status == 401)
            #expect(refused.json?["reason"] == .string("missing_token"))
            #expect(refused.headers["grpc-status"].isEmpty, "\(refused.headers)")
            #expect(refused.headers.first(name: "www-authenticate")?.hasPrefix("Bearer") == true)
            // An HTTP/2 client sending the same still gets gRPC's form.
            let answers = try await Self.send([
                Sent(name: "grpc", headers: Self.block(env, method: "POST", path: "/v1/orders", [("content-type", "application/grpc")])),
            ], to: env)
            #expect(answers["grpc"]?.status == 200)
            #expect(answers["grpc"]?.value("grpc-status") == "16")
            try await env.expectNothingReachedUpstream()
        }
    }

    // MARK: - 6. One set of field-value and method rules (H15)

    @Test(arguments: upstreamProtocols)
    func fieldValuesAndMethodsTheHTTP1ParserRefusesAreRefusedOverHTTP2(_ upstream: UpstreamProtocol) async throws {
        try await Self.run(upstream) { env in
            let token = Self.token()
            let cases: [(String, [(String, String)])] = [
                ("leadingSpace", Self.block(env, token: token, [("x-note", " padded")])),
                ("trailingTab", Self.block(env, token: token, [("x-note", "padded\t")])),
                ("control", Self.block(env, token: token, [("x-note", "a\u{01}b")])),
                ("delete", Self.block(env, token: token, [("x-note", "a\u{7F}b")])),
                ("escape", Self.block(env, token: token, [("x-note", "a\u{1B}[31mb")])),
                ("methodNotAToken", Self.block(env, method: "G(ET", token: token)),
                ("lowerCaseMethod", Self.block(env, method: "get", token: token)),
                ("unknownMethod", Self.block(env, method: "FROB", token: token)),
            ]
            let answers = try await Self.send(
                cases.map { Sent(name: $0.0, headers: $0.1) } + [
                    Sent(name: "innerSpaceAndTab", headers: Self.block(env, path: "/v1/inner", token: token, [("x-note", "a b\tc")])),
                ], to: env)
            for (name, _) in cases { Self.expectRefusedAtIntake(answers[name], name) }
            #expect(answers["innerSpaceAndTab"]?.status == 200, "inner whitespace is a valid value")
            #expect(env.upstream.requests.map(\.uri) == ["/v1/inner"])
            #expect(env.upstream.last?.value("x-note") == "a b\tc")

            // The same bytes over HTTP/1.1: 400 from the HTTP/1.1 parser.
            for (name, head) in [
                ("control", "GET /v1/orders HTTP/1.1\r\nHost: a\r\nX-Note: a\u{01}b\r\n\r\n"),
                ("delete", "GET /v1/orders HTTP/1.1\r\nHost: a\r\nX-Note: a\u{7F}b\r\n\r\n"),
                ("methodNotAToken", "G(ET /v1/orders HTTP/1.1\r\nHost: a\r\n\r\n"),
                ("lowerCaseMethod", "get /v1/orders HTTP/1.1\r\nHost: a\r\n\r\n"),
            ] {
                let raw = RawHTTP.exchange(port: env.port, head)
                #expect(RawHTTP.statuses(raw) == [400], "HTTP/1.1 \(name): \(raw)")
            }
            #expect(env.upstream.requestCount == 1)
        }
    }

    // MARK: - 7. HEAD on Gatehouse's own endpoints, both doors (H16)

    @Test(arguments: upstreamProtocols)
    func headOnEveryOwnEndpointIsAnsweredWithoutABodyOverBothDoors(_ upstream: UpstreamProtocol) async throws {
        try await Self.run(upstream) { env in
            let token = Self.token()
            let described = [("x-forwarded-method", "GET"), ("x-forwarded-uri", "/v1/orders")]
            let answers = try await Self.send([
                Sent(name: "check", headers: Self.block(env, method: "HEAD", path: "/.gatehouse/check", token: token, described)),
                Sent(name: "checkRefused", headers: Self.block(env, method: "HEAD", path: "/.gatehouse/check", described)),
                Sent(name: "userinfo", headers: Self.block(env, method: "HEAD", path: "/.gatehouse/userinfo", token: token)),
                Sent(name: "signout", headers: Self.block(env, method: "HEAD", path: "/.gatehouse/signout", token: token)),
                Sent(name: "unknown", headers: Self.block(env, method: "HEAD", path: "/.gatehouse/nothing", token: token)),
            ], to: env)
            let expected = ["check": 200, "checkRefused": 401, "userinfo": 200, "signout": 405, "unknown": 404]
            for (name, status) in expected {
                let answer = answers[name]
                #expect(answer?.status == status, "HTTP/2 HEAD \(name): \(String(describing: answer))")
                #expect(answer?.ended == true && answer?.resetCode == nil && answer?.body == "", "HTTP/2 HEAD \(name): \(String(describing: answer))")
            }
            #expect(answers["check"]?.value("x-auth-subject") == "user-1")
            #expect(answers["signout"]?.value("allow") == "POST")

            let paths = ["check": "/.gatehouse/check", "checkRefused": "/.gatehouse/check", "userinfo": "/.gatehouse/userinfo",
                         "signout": "/.gatehouse/signout", "unknown": "/.gatehouse/nothing"]
            for (name, status) in expected {
                let response = try await env.request(
                    paths[name]!, method: .HEAD, token: name == "checkRefused" ? nil : token,
                    headers: [("X-Forwarded-Method", "GET"), ("X-Forwarded-Uri", "/v1/orders")])
                #expect(response.status == status, "HTTP/1.1 HEAD \(name)")
                #expect(response.body.isEmpty, "HTTP/1.1 HEAD \(name): \(response.body)")
                if name == "check" { #expect(response.headers.first(name: "x-auth-subject") == "user-1") }
            }
            try await env.expectNothingReachedUpstream()
        }
    }
}
