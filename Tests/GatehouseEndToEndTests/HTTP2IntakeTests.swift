import Foundation
@testable import Gatehouse
import NIOHTTP1
import Testing
import GatehouseSyntax
import GatehouseConfig
import GatehouseAuth
import GatehouseProxy
import GatehouseExtAuthz

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
        /// Values sent as Latin-1 (one byte per character: bytes that are not UTF-8), not as UTF-8.
        var latin1 = false
        /// No END_STREAM after the last frame sent, and nothing more (a client that stalls mid-request).
        var open = false
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
    /// - Parameter port: another of its ports than the client port (the ext_authz port).
    static func send(_ requests: [Sent], to env: TestEnvironment, port: Int? = nil) async throws -> [String: Answer] {
        try await sendReporting(requests, to: env, port: port).answers
    }

    /// `send`, with the connection's fate (requests.py's summary: `goaway`, `error_code`, `goaway_last_stream`, `closed`).
    static func sendReporting(
        _ requests: [Sent], to env: TestEnvironment, port: Int? = nil
    ) async throws -> (answers: [String: Answer], connection: [String: JSONValue]) {
        func pairs(_ fields: [(String, String)]) -> JSONValue { .array(fields.map { .array([.string($0.0), .string($0.1)]) }) }
        let plan = JSONValue.array(requests.map { request in
            var object: [String: JSONValue] = ["name": .string(request.name), "headers": pairs(request.headers)]
            if let body = request.body { object["body"] = .string(body) }
            if let trailers = request.trailers { object["trailers"] = pairs(trailers) }
            if request.latin1 { object["latin1"] = .bool(true) }
            if request.open { object["open"] = .bool(true) }
            return .object(object)
        })
        // In a file: a plan with large fields would not fit in an argument list.
        let planFile = FileManager.default.temporaryDirectory.appendingPathComponent("h2-plan-\(UUID().uuidString).json")
        try plan.compactJSON.write(to: planFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: planFile) }
        let report = try await PythonPeer.runJSON("h2", "requests.py", ["--port", String(port ?? env.port), "--plan", "@" + planFile.path])
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
        return (answers, report)
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
        ("x-gatehouse-assertion", "forged"), ("x_gatehouse_assertion", "forged"),  // [assertion]'s header (A01)
    ]

    static func withConfiguredHeader(_ configuration: inout Configuration) {
        configuration.headers.mappings.append(HeaderMapping(name: "X-User-Email", claimPath: "email"))
        configuration.assertion = AssertionSettings(issuer: "https://gatehouse.test", audience: "orders", signingKey: .generated())
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

    /// A stream reset as malformed (RFC 9113 §8.1.1): RST_STREAM PROTOCOL_ERROR, no answer.
    static func expectReset(_ answer: Answer?, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(answer?.resetCode == 1 && answer?.status == nil, "\(what): PROTOCOL_ERROR: \(String(describing: answer))",
                sourceLocation: sourceLocation)
    }

    // MARK: - 8. Content-Length as the HTTP/1.1 parser reads it (H18)

    /// `+5`, `5, 5` and two `5` fields each framed a 5-byte body that reached an HTTP/1.1 upstream with the client's
    /// field as written (a desync on a pooled connection for an upstream that reads them otherwise); Envoy refused all three.
    @Test(arguments: upstreamProtocols)
    func aContentLengthThatIsNotOneFieldOfDigitsIsRefusedAndOneOfDigitsIsSentPlain(_ upstream: UpstreamProtocol) async throws {
        try await Self.run(upstream) { env in
            let token = Self.token()
            func post(_ name: String, _ fields: [(String, String)]) -> Sent {
                Sent(name: name, headers: Self.block(env, method: "POST", path: "/v1/cl/\(name)", token: token, fields), body: "hello")
            }
            let refused = ["plus": [("content-length", "+5")], "list": [("content-length", "5, 5")],
                           "twice": [("content-length", "5"), ("content-length", "5")]]
            let answers = try await Self.send(
                refused.sorted { $0.key < $1.key }.map { post($0.key, $0.value) } + [
                    post("zeros", [("content-length", "005")]),
                    post("plain", [("content-length", "5")]),
                    post("none", []),
                    post("chunked", [("transfer-encoding", "chunked")]),
                    post("after", [("content-length", "5")]),
                ], to: env)
            for name in refused.keys { Self.expectRefusedAtIntake(answers[name], "content-length \(name)") }
            Self.expectReset(answers["chunked"], "transfer-encoding over HTTP/2")
            for name in ["zeros", "plain", "none", "after"] { #expect(answers[name]?.status == 200, "\(name): \(String(describing: answers[name]))") }
            #expect(Set(env.upstream.requests.map(\.uri)) == ["/v1/cl/zeros", "/v1/cl/plain", "/v1/cl/none", "/v1/cl/after"])
            for path in ["/v1/cl/zeros", "/v1/cl/plain", "/v1/cl/after"] {
                let received = try #require(env.upstream.requests.first { $0.uri == path })
                #expect(received.values("content-length") == ["5"], "\(path): one length of plain digits: \(received.headers)")
                #expect(received.values("transfer-encoding").isEmpty)
                #expect(received.bodyBytes == 5)
            }
            // Without a length the body is framed by Gatehouse: chunked to an HTTP/1.1 upstream, by DATA to an HTTP/2 one.
            let none = try #require(env.upstream.requests.first { $0.uri == "/v1/cl/none" })
            #expect(none.values("content-length").isEmpty && none.bodyBytes == 5, "\(none.headers)")
            if upstream == .http1 { #expect(none.values("transfer-encoding") == ["chunked"], "\(none.headers)") }

            // The HTTP/1.1 door refuses the same fields.
            for field in ["Content-Length: +5", "Content-Length: 5, 5", "Content-Length: 5\r\nContent-Length: 5"] {
                let raw = RawHTTP.exchange(port: env.port, "POST /v1/cl/h1 HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(token)\r\n\(field)\r\n\r\nhello")
                #expect(RawHTTP.statuses(raw) == [400], "HTTP/1.1 \(field): \(raw)")
            }
            #expect(env.upstream.requestCount == 4)
        }
    }

    // MARK: - 9. A header section over max_header_bytes is one refused stream (H19)

    /// A 20 KiB value was GOAWAY COMPRESSION_ERROR and a 59 KiB one GOAWAY PROTOCOL_ERROR, both naming stream
    /// 2^31-1: every sibling died and the client was told any stream may have been processed.
    @Test(arguments: upstreamProtocols)
    func aHeaderSectionOverTheLimitIsA431OfItsOwnStream(_ upstream: UpstreamProtocol) async throws {
        try await Self.run(upstream) { env in
            let token = Self.token()
            let (answers, connection) = try await Self.sendReporting([
                Sent(name: "before", headers: Self.block(env, path: "/v1/big/before", token: token)),
                Sent(name: "k20", headers: Self.block(env, path: "/v1/big/20", token: token, [("x-big", String(repeating: "a", count: 20 << 10))])),
                Sent(name: "k59", headers: Self.block(env, path: "/v1/big/59", token: token, [("x-big", String(repeating: "b", count: 59 << 10))])),
                Sent(name: "many", headers: Self.block(env, path: "/v1/big/many", token: token,
                                                       (0..<400).map { ("x-field-\($0)", String(repeating: "c", count: 40)) })),
                Sent(name: "after", headers: Self.block(env, path: "/v1/big/after", token: token)),
            ], to: env)
            for name in ["k20", "k59", "many"] {
                #expect(answers[name]?.status == 431, "\(name): \(String(describing: answers[name]))")
                #expect(answers[name]?.ended == true && answers[name]?.resetCode == nil, "\(name): \(String(describing: answers[name]))")
            }
            #expect(answers["before"]?.status == 200 && answers["after"]?.status == 200, "\(answers)")
            #expect(connection["goaway"] == .bool(false) && connection["closed"] == .bool(false), "\(connection)")
            #expect(env.upstream.requests.map(\.uri) == ["/v1/big/before", "/v1/big/after"])
            #expect(env.failureLog.isEmpty, "\(env.failureLogLines)")
        }
    }

    /// Past what nghttp2's HPACK decoder decodes of one block (`HTTP2ServerSetup.headerListCeiling`), the connection
    /// ends; its GOAWAY names the last stream Gatehouse took (RFC 9113 §6.8), not 2^31-1.
    @Test func aBlockPastTheDecodersCeilingEndsTheConnectionNamingTheLastStreamTaken() async throws {
        try await TestEnvironment.run { env in
            let token = Self.token()
            let (answers, connection) = try await Self.sendReporting([
                Sent(name: "first", headers: Self.block(env, path: "/v1/ceiling/1", token: token)),
                Sent(name: "second", headers: Self.block(env, path: "/v1/ceiling/2", token: token)),
                Sent(name: "huge", headers: Self.block(env, path: "/v1/ceiling/huge", token: token, [("x-big", String(repeating: "a", count: 300 << 10))])),
            ], to: env)
            #expect(answers["first"]?.status == 200 && answers["second"]?.status == 200, "\(answers)")
            #expect(connection["goaway"] == .bool(true), "\(connection)")
            #expect(connection["goaway_last_stream"]?.integerValue == 3, "the second stream, the last taken: \(connection)")
            #expect(env.upstream.requests.map(\.uri) == ["/v1/ceiling/1", "/v1/ceiling/2"])
        }
    }

    /// One setting for both doors: with `max_header_bytes = 32768` a 20 KiB field is served and a 40 KiB one is
    /// 431, over HTTP/2 and HTTP/1.1 alike.
    @Test func theHTTP2HeaderLimitIsMaxHeaderBytes() async throws {
        try await Self.run(.http1, configure: { $0.listen.maxHeaderBytes = 32768 }) { env in
            let token = Self.token()
            let answers = try await Self.send([
                Sent(name: "k20", headers: Self.block(env, path: "/v1/limit/20", token: token, [("x-big", String(repeating: "a", count: 20 << 10))])),
                Sent(name: "k40", headers: Self.block(env, path: "/v1/limit/40", token: token, [("x-big", String(repeating: "a", count: 40 << 10))])),
            ], to: env)
            #expect(answers["k20"]?.status == 200, "\(String(describing: answers["k20"]))")
            #expect(answers["k40"]?.status == 431, "\(String(describing: answers["k40"]))")
            for (size, status) in [(20, 200), (40, 431)] {
                let raw = RawHTTP.exchange(port: env.port, "GET /v1/limit/h1-\(size) HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(token)\r\n"
                    + "X-Big: \(String(repeating: "a", count: size << 10))\r\nConnection: close\r\n\r\n")
                #expect(RawHTTP.statuses(raw) == [status], "HTTP/1.1 \(size) KiB: \(raw.prefix(200))")
            }
            #expect(Set(env.upstream.requests.map(\.uri)) == ["/v1/limit/20", "/v1/limit/h1-20"])
        }
    }

    // MARK: - 10. Field values are UTF-8 or refused, on both doors (H20)

    /// The byte 0xE9 reached the upstream as EF BF BD (the HTTP/2 door's String(decoding:) makes U+FFFD of it, and
    /// the HTTP/1.1 parser did the same): a value is now forwarded byte for byte, or refused.
    @Test(arguments: upstreamProtocols)
    func aValueThatIsNotUTF8IsRefusedAndUTF8IsForwardedAsSent(_ upstream: UpstreamProtocol) async throws {
        try await Self.run(upstream) { env in
            let token = Self.token()
            let text = "caf\u{E9} \u{1F510} \u{202E}"
            let answers = try await Self.send([
                Sent(name: "latin1", headers: Self.block(env, path: "/v1/bytes/latin1", token: token, [("x-note", "caf\u{E9}")]), latin1: true),
                Sent(name: "replacement", headers: Self.block(env, path: "/v1/bytes/fffd", token: token, [("x-note", "a\u{FFFD}b")])),
                Sent(name: "trailer", headers: Self.block(env, method: "POST", path: "/v1/bytes/trailer", token: token), body: "hello",
                     trailers: [("x-checksum", "\u{E9}")], latin1: true),
                Sent(name: "utf8", headers: Self.block(env, path: "/v1/bytes/utf8", token: token, [("x-note", text)])),
            ], to: env)
            Self.expectRefusedAtIntake(answers["latin1"], "0xE9 over HTTP/2")
            Self.expectRefusedAtIntake(answers["replacement"], "U+FFFD over HTTP/2")
            #expect(answers["utf8"]?.status == 200, "\(String(describing: answers["utf8"]))")
            // A trailer section arrives after its head was judged: the stream is reset.
            #expect(answers["trailer"]?.resetCode != nil, "\(String(describing: answers["trailer"]))")
            let utf8 = try #require(env.upstream.requests.first { $0.uri == "/v1/bytes/utf8" })
            #expect(utf8.values("x-note") == [text])
            #expect(!env.upstream.requests.contains { $0.uri == "/v1/bytes/latin1" || $0.uri == "/v1/bytes/fffd" })

            // The HTTP/1.1 door: the same rule.
            func h1(_ value: [UInt8]) -> String {
                RawHTTP.exchange(port: env.port, Array("GET /v1/bytes/h1 HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(token)\r\nX-Note: ".utf8)
                    + value + Array("\r\nConnection: close\r\n\r\n".utf8))
            }
            #expect(RawHTTP.statuses(h1(Array("caf".utf8) + [0xE9])) == [400])
            #expect(RawHTTP.statuses(h1(Array("a\u{FFFD}b".utf8))) == [400])
            #expect(RawHTTP.statuses(h1(Array(text.utf8))) == [200])
            #expect(env.upstream.requests.filter { $0.uri == "/v1/bytes/h1" }.map { $0.values("x-note") } == [[text]])
        }
    }

    // MARK: - 11. TE is case-insensitive (H21)

    /// `te: Trailers` reset the stream (NIO compared the value with "trailers" exactly); it is TE's one allowed value.
    @Test(arguments: upstreamProtocols)
    func teTrailersInAnyCaseIsAcceptedAndOtherCodingsResetTheStream(_ upstream: UpstreamProtocol) async throws {
        try await Self.run(upstream) { env in
            let token = Self.token()
            let answers = try await Self.send([
                Sent(name: "capital", headers: Self.block(env, path: "/v1/te/capital", token: token, [("te", "Trailers")])),
                Sent(name: "upper", headers: Self.block(env, path: "/v1/te/upper", token: token, [("te", "TRAILERS")])),
                Sent(name: "gzip", headers: Self.block(env, path: "/v1/te/gzip", token: token, [("te", "gzip")])),
                Sent(name: "after", headers: Self.block(env, path: "/v1/te/after", token: token)),
            ], to: env)
            #expect(answers["capital"]?.status == 200, "\(String(describing: answers["capital"]))")
            #expect(answers["upper"]?.status == 200, "\(String(describing: answers["upper"]))")
            Self.expectReset(answers["gzip"], "te: gzip")
            #expect(answers["after"]?.status == 200)
            let capital = try #require(env.upstream.requests.first { $0.uri == "/v1/te/capital" })
            // TE is hop-by-hop: an HTTP/2 upstream gets the one value it may carry, an HTTP/1.1 upstream none.
            #expect(capital.values("te") == (upstream == .http2 ? ["trailers"] : []), "\(capital.headers)")
        }
    }
}
