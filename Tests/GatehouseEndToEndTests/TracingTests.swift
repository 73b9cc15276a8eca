import AsyncHTTPClient
import Foundation
@testable import Gatehouse
import NIOCore
import NIOHTTP1
import Testing
import GatehouseSyntax
import GatehouseConfig
import GatehouseTelemetry

/// OpenTelemetry traces (`[tracing]`, docs/reference.md §16) as a collector receives them: an OTLP/HTTP receiver
/// decoding with opentelemetry-proto (Resources/tracing/otlp_receiver.py), real requests through both doors, both
/// upstream protocols, gRPC and ext_authz Checks.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct TracingTests {
    static let incomingTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
    static let incomingParent = "00f067aa0ba902b7"
    static let incoming = "00-\(incomingTraceID)-\(incomingParent)-01"

    /// The collector the tests read spans back from.
    struct Collector {
        let pid: pid_t
        let port: Int
        var endpoint: URL { URL(string: "http://127.0.0.1:\(port)/v1/traces")! }  // safe: a loopback literal

        static func start(_ arguments: [String] = []) async throws -> Collector {
            let (pid, port) = try await PythonPeer.startServer("tracing", "otlp_receiver.py", arguments, what: "the OTLP receiver")
            return Collector(pid: pid, port: port)
        }

        struct Received {
            let spans: [[String: JSONValue]]
            let exports: Int64
            let raw: [UInt8]
        }

        func received(_ env: TestEnvironment) async throws -> Received {
            let answer = try await env.request("/spans", port: port)
            let object = try #require(try StrictJSON.parse(Array(answer.body.utf8), maxDepth: 64).objectValue)
            return Received(
                spans: (object["spans"]?.arrayValue ?? []).compactMap(\.objectValue), exports: object["exports"]?.integerValue ?? 0,
                raw: Array(Data(base64Encoded: object["raw"]?.stringValue ?? "") ?? Data()))
        }

        /// The spans of `traceID` once `count` of them have arrived (the exporter sends every 50 ms here).
        func spans(of traceID: String, count: Int, _ env: TestEnvironment) async throws -> [[String: JSONValue]] {
            var found: [[String: JSONValue]] = []
            _ = try await Contract.eventually {
                found = try await received(env).spans.filter { $0["trace_id"] == .string(traceID) }
                return found.count >= count
            }
            return found
        }

        func stop() { ChildProcess.stop(pid, grace: .zero) }
    }

    static func run(
        collectorArguments: [String] = [], upstreamHTTP2: Bool = false, configure: @escaping (inout Configuration) -> Void = { _ in },
        withKeys: @escaping (inout Configuration, TestJWKSServer) -> Void = { _, _ in },
        _ body: (TestEnvironment, Collector) async throws -> Void
    ) async throws {
        let collector = try await Collector.start(collectorArguments)
        defer { collector.stop() }
        try await TestEnvironment.run(upstreamHTTP2: upstreamHTTP2, configure: { configuration, jwks in
            var tracing = TracingSettings(endpoint: collector.endpoint)
            tracing.exportInterval = .milliseconds(50)
            tracing.serviceName = "orders-gatehouse"
            configuration.tracing = tracing
            var publicRoute = RouteSettings(match: .prefix("/public"))
            publicRoute.auth = .public
            configuration.routes = [publicRoute]
            withKeys(&configuration, jwks)
            configure(&configuration)
        }) { env in try await body(env, collector) }
    }

    static func token() -> String { TestSigner.ec.token(claims: Claims.valid()) }

    static func span(_ spans: [[String: JSONValue]], named name: String) -> [String: JSONValue]? {
        spans.first { $0["name"] == .string(name) }
    }

    static func attribute(_ span: [String: JSONValue]?, _ key: String) -> JSONValue? { span?["attributes"]?.objectValue?[key] }

    /// `00-<trace>-<parent>-<flags>` split.
    static func parts(_ traceParent: String?) -> [String] { (traceParent ?? "").split(separator: "-").map(String.init) }

    /// A caller's trace is continued through both doors to both upstream protocols: the server span is the caller's
    /// span's child, the verification and the upstream call are its children, and the upstream's `traceparent`
    /// names the upstream call's span.
    @Test(arguments: [false, true])
    func aCallersTraceIsContinuedToTheUpstream(upstreamHTTP2: Bool) async throws {
        try await Self.run(upstreamHTTP2: upstreamHTTP2) { (env: TestEnvironment, collector: Collector) async throws in
            for overHTTP2 in [false, true] {
                let headers = [("traceparent", Self.incoming), ("tracestate", "vendor=opaque"), ("Authorization", "Bearer \(Self.token())")]
                if overHTTP2 {
                    var arguments = ["--http2-prior-knowledge"]
                    for (name, value) in headers { arguments += ["-H", "\(name): \(value)"] }
                    #expect(try await HTTP2Tests.curl(arguments + [env.baseURL + "/v1/orders?page=2"]).status == 200)
                } else {
                    #expect(try await env.request("/v1/orders?page=2", headers: headers).status == 200)
                }
                let received = try #require(env.upstream.last)
                let sent = Self.parts(received.value("traceparent"))
                #expect(received.values("traceparent").count == 1 && received.values("tracestate") == ["vendor=opaque"], "\(received.headers)")
                #expect(sent.count == 4 && sent[1] == Self.incomingTraceID && sent[2] != Self.incomingParent && sent[3] == "01", "\(sent)")
                let spans = try await collector.spans(of: Self.incomingTraceID, count: overHTTP2 ? 6 : 3, env)
                let mine = spans.suffix(3)
                let server = try #require(mine.first { $0["kind"] == .number("2") }, "\(spans)")
                let verify = try #require(Self.span(Array(mine), named: "gatehouse.verify"), "\(spans)")
                let upstream = try #require(mine.first { $0["kind"] == .number("3") }, "\(spans)")
                #expect(server["parent_span_id"] == .string(Self.incomingParent) && server["trace_state"] == .string("vendor=opaque"))
                #expect(verify["parent_span_id"] == server["span_id"] && upstream["parent_span_id"] == server["span_id"])
                #expect(upstream["span_id"] == .string(sent.count == 4 ? sent[2] : ""), "the upstream's traceparent names the upstream call's span")
                #expect(Self.attribute(server, "http.request.method") == .string("GET"))
                #expect(Self.attribute(server, "url.path") == .string("/v1/orders"), "never the query")
                #expect(Self.attribute(server, "http.response.status_code") == .number("200"))
                #expect(Self.attribute(server, "network.protocol.version") == .string(overHTTP2 ? "2" : "1.1"))
                #expect(Self.attribute(server, "server.address") == .string("127.0.0.1"))
                #expect(Self.attribute(verify, "gatehouse.provider") == .string("test"))
                #expect(Self.attribute(upstream, "server.port") == .number(String(env.upstream.port)))
                #expect(Self.attribute(upstream, "http.response.status_code") == .number("200"))
                #expect(server["resource"]?.objectValue?["service.name"] == .string("orders-gatehouse"))
                let (start, end) = (server["start"]?.integerValue ?? 0, server["end"]?.integerValue ?? 0)
                #expect(start > 0 && end >= start && (upstream["start"]?.integerValue ?? 0) >= start, "\(server)")
            }
        }
    }

    /// No `traceparent`, or a malformed one: a new trace, its root span Gatehouse's; the malformed header and its
    /// `tracestate` never reach the upstream.
    @Test func aMissingOrMalformedTraceparentStartsANewTrace() async throws {
        try await Self.run { (env: TestEnvironment, collector: Collector) async throws in
            for header in [nil, "00-\(Self.incomingTraceID.uppercased())-\(Self.incomingParent)-01", "00-" + String(repeating: "0", count: 32) + "-\(Self.incomingParent)-01"] {
                var headers = [("tracestate", "vendor=stale")]
                if let header { headers.append(("traceparent", header)) }
                #expect(try await env.request("/v1/orders", token: Self.token(), headers: headers).status == 200)
                let received = try #require(env.upstream.last)
                let sent = Self.parts(received.value("traceparent"))
                #expect(sent.count == 4 && sent[1].count == 32 && sent[1] != Self.incomingTraceID && sent[3] == "01", "\(sent)")
                #expect(received.values("tracestate").isEmpty, "a tracestate goes only with the traceparent it came with")
                let spans = try await collector.spans(of: sent[1], count: 3, env)
                let server = try #require(spans.first { $0["kind"] == .number("2") }, "\(spans)")
                #expect(server["parent_span_id"] == .string(""), "a root span")
            }
        }
    }

    /// A refusal's span says why, and no exported byte holds the token, a cookie or a proof (the collector keeps every body).
    @Test func aRefusalsSpanCarriesTheReasonAndNoSecretIsExported() async throws {
        try await Self.run { (env: TestEnvironment, collector: Collector) async throws in
            let forged = String(Self.token().dropLast(8)) + "AAAAAAAA"
            let proof = "eyJhbGciOiJFUzI1NiJ9.proof-material.sig"
            let response = try await env.request(
                "/v1/orders", headers: [("traceparent", Self.incoming), ("Authorization", "Bearer \(forged)"), ("Cookie", "session=secret-cookie"),
                                        ("DPoP", proof)])
            #expect(response.status == 401)
            let spans = try await collector.spans(of: Self.incomingTraceID, count: 2, env)
            let server = try #require(spans.first { $0["kind"] == .number("2") })
            let verify = try #require(Self.span(spans, named: "gatehouse.verify"))
            #expect(Self.attribute(server, "gatehouse.reason") == .string("bad_signature") && Self.attribute(server, "http.response.status_code") == .number("401"))
            #expect(verify["status"]?.objectValue?["code"] == .number("2") && Self.attribute(verify, "gatehouse.reason") == .string("bad_signature"))
            #expect(!spans.contains { $0["kind"] == .number("3") }, "nothing went upstream")
            let raw = try await collector.received(env).raw
            for secret in [forged, String(forged.split(separator: ".")[1]), String(forged.split(separator: ".")[2]), "secret-cookie", "proof-material"] {
                #expect(raw.count > 0 && !raw.contains(Array(secret.utf8)), "\(secret.prefix(20))… was exported")
            }
        }
    }

    /// `sampling_ratio = 0`: nothing is exported, yet the upstream gets a `traceparent` (not sampled) of a new trace,
    /// and a caller's sampled trace is still followed (parent-based).
    @Test func aSamplingRatioOfZeroExportsNothingButStillPropagates() async throws {
        try await Self.run(configure: { $0.tracing?.samplingRatio = 0 }) { (env: TestEnvironment, collector: Collector) async throws in
            for _ in 0..<5 { #expect(try await env.request("/v1/orders", token: Self.token()).status == 200) }
            let sent = Self.parts(env.upstream.last?.value("traceparent"))
            #expect(sent.count == 4 && sent[3] == "00", "\(sent)")
            #expect(try await env.request("/v1/orders", token: Self.token(), headers: [("traceparent", Self.incoming)]).status == 200)
            _ = try await collector.spans(of: Self.incomingTraceID, count: 3, env)
            // Every span is exported by now (the caller's trace came last): only the caller's trace's.
            await env.gatehouse.tracer?.exporter.exportQueued()
            let all = try await collector.received(env).spans
            #expect(all.count == 3 && all.allSatisfy { $0["trace_id"] == .string(Self.incomingTraceID) }, "\(all.count) spans")
        }
    }

    /// A collector that refuses every export, or takes 3 s to answer: requests do not wait for it (measured), and what
    /// could not be exported is dropped and counted; memory stays bounded by the queue.
    @Test(arguments: [["--status", "503"], ["--delay", "3"]])
    func aDeadOrSlowCollectorCostsNoRequestTimeAndItsDropsAreCounted(_ arguments: [String]) async throws {
        try await Self.run(collectorArguments: arguments, configure: {
            $0.tracing?.maxQueueSize = 20
            $0.tracing?.maxBatchSize = 10
            $0.tracing?.exportTimeout = .seconds(1)
        }) { (env: TestEnvironment, _: Collector) async throws in
            let clock = ContinuousClock()
            var slowest: Duration = .zero
            for _ in 0..<60 {
                let started = clock.now
                #expect(try await env.request("/v1/orders", token: Self.token()).status == 200)
                slowest = max(slowest, clock.now - started)
            }
            #expect(slowest < .milliseconds(500), "a request waited \(slowest) for the collector")
            #expect(env.gatehouse.tracer?.exporter.queued ?? 99 <= 20)
            let dropped = await Contract.eventually {
                let metrics = (try? await env.admin("/metrics").body) ?? ""
                let line = metrics.split(separator: "\n").first { $0.hasPrefix("gatehouse_trace_spans_dropped_total ") }
                return (line?.split(separator: " ").last.flatMap { Double($0) } ?? 0) >= 100
            }
            #expect(dropped, "180 spans, a queue of 20: most are dropped and counted")
        }
    }

    /// A graceful stop exports what is queued once the requests in flight have drained (here nothing would be sent
    /// for 5 minutes otherwise).
    @Test func aGracefulStopExportsWhatIsQueued() async throws {
        try await Self.run(configure: { $0.tracing?.exportInterval = .seconds(300) }) { (env: TestEnvironment, collector: Collector) async throws in
            #expect(try await env.request("/v1/orders", token: Self.token(), headers: [("traceparent", Self.incoming)]).status == 200)
            #expect(try await collector.received(env).spans.isEmpty, "nothing before the interval")
            await env.gatehouse.stop()
            let spans = try await collector.spans(of: Self.incomingTraceID, count: 3, env)
            #expect(spans.count == 3, "\(spans.map { $0["name"] })")
        }
    }

    /// A collector nobody answers on does not hold a graceful stop up: the last export gets one `export_timeout`,
    /// however many batches wait (30 here, of one span each; found when a stop took minutes in a benchmark).
    @Test func aStopDoesNotWaitForADeadCollectorBatchByBatch() async throws {
        let closed = try await freeLoopbackPort()
        try await Self.run(configure: {
            $0.tracing = TracingSettings(endpoint: URL(string: "http://127.0.0.1:\(closed)/v1/traces")!)  // safe: a loopback literal
            $0.tracing?.exportInterval = .seconds(300)
            $0.tracing?.exportTimeout = .seconds(1)
            $0.tracing?.maxBatchSize = 1
        }) { (env: TestEnvironment, _: Collector) async throws in
            for _ in 0..<10 { #expect(try await env.request("/v1/orders", token: Self.token()).status == 200) }
            // A request's spans are queued as its answer goes out: the last one's a moment after the client has it.
            #expect(await Contract.eventually { env.gatehouse.tracer?.exporter.queued == 30 })
            let clock = ContinuousClock()
            let started = clock.now
            await env.gatehouse.stop()
            let took = clock.now - started
            #expect(took < .seconds(4), "the stop waited \(took) for a dead collector")
        }
    }

    @Test func aGRPCCallsMetadataCarriesTheTraceparent() async throws {
        let collector = try await Collector.start()
        defer { collector.stop() }
        try await GRPCTests.run(configure: { configuration, _ in
            var tracing = TracingSettings(endpoint: collector.endpoint)
            tracing.exportInterval = .milliseconds(50)
            configuration.tracing = tracing
        }) { (env: TestEnvironment, _: TestGRPCServer) async throws in
            let result = try await GRPCCallResult.call(port: env.port, "unary", token: GRPCTests.token(), metadata: [("traceparent", Self.incoming)])
            #expect(result.code == "OK", "\(result.object)")
            let seen = GRPCCallResult.echoedMetadata(try #require(result.responses.first))
            let sent = Self.parts(seen.first { $0.0 == "traceparent" }?.1)
            #expect(sent.count == 4 && sent[1] == Self.incomingTraceID, "\(seen)")
            let spans = try await collector.spans(of: Self.incomingTraceID, count: 3, env)
            #expect(spans.first { $0["kind"] == .number("3") }?["span_id"] == .string(sent.count == 4 ? sent[2] : ""))
            #expect(Self.attribute(spans.first { $0["kind"] == .number("2") }, "http.request.method") == .string("POST"))
        }
    }

    /// An ext_authz Check: its span (`gatehouse.via`), and the allow sets a `traceparent` naming it.
    @Test func anExtAuthzAllowCarriesATraceparentNamingTheChecksSpan() async throws {
        try await Self.run(configure: {
            $0.extAuthz = ExtAuthzSettings(address: SocketAddressSetting(host: "127.0.0.1", port: 0))
        }) { (env: TestEnvironment, collector: Collector) async throws in
            let port = try #require(env.gatehouse.extAuthzAddress?.port)
            let answers = try await ExtAuthzTests.call(port, [
                ExtAuthzTests.check("valid", headers: [("authorization", "Bearer \(Self.token())"), ("traceparent", Self.incoming)]),
            ])
            let valid = try #require(answers["valid"])
            let sent = Self.parts(valid.values("traceparent").first)
            #expect(valid.allowed == true && sent.count == 4 && sent[1] == Self.incomingTraceID, "\(valid)")
            let spans = try await collector.spans(of: Self.incomingTraceID, count: 2, env)
            let server = try #require(spans.first { $0["kind"] == .number("2") }, "\(spans)")
            #expect(server["span_id"] == .string(sent.count == 4 ? sent[2] : ""))
            #expect(Self.attribute(server, "gatehouse.via") == .string("ext_authz_grpc"))
        }
    }

    /// What a decision waits on is a child span: here the JWKS fetch for a `kid` the cached key set lacks.
    @Test func aKeyFetchForAnUnknownKidIsAChildSpan() async throws {
        try await Self.run(configure: { $0.jwks.unknownKidCooldown = .zero }) { (env: TestEnvironment, collector: Collector) async throws in
            let rotated = TestSigner.ec.with(keyID: "ec-rotated")
            env.jwks.update { $0.body = TestSigner.jwks([.rsa, .ec, .ed, rotated]) }
            let token = rotated.token(claims: Claims.valid())
            #expect(try await env.request("/v1/orders", token: token, headers: [("traceparent", Self.incoming)]).status == 200)
            let spans = try await collector.spans(of: Self.incomingTraceID, count: 4, env)
            let server = try #require(spans.first { $0["kind"] == .number("2") })
            let fetch = try #require(Self.span(spans, named: "gatehouse.jwks.fetch"), "\(spans.map { $0["name"] })")
            #expect(fetch["parent_span_id"] == server["span_id"] && fetch["kind"] == .number("3"))
            #expect(Self.attribute(fetch, "gatehouse.provider") == .string("test"))
            #expect(Self.attribute(Self.span(spans, named: "gatehouse.verify"), "gatehouse.verification.cache") == .string("miss"))
        }
    }
}

extension TracingTests {
    /// An opaque token's introspection call is a child span (a second request, answered from the cache, has none), and
    /// HTTP/2 streams are counted (`gatehouse_http2_streams_total`).
    /// `gatehouse.verification.cache` says how the token was verified, also when the decision waited on something
    /// else: a token from the cache whose userinfo call was in flight is a hit, the one that verified it a miss.
    @Test func aCachedTokenWaitingOnAUserinfoCallInFlightIsACacheHit() async throws {
        try await Self.run(withKeys: { configuration, jwks in
            PresetTests.cognito(&configuration, jwks, tokenUse: .access)
            configuration.providers[0].userinfo = true
            configuration.providers[0].domain = jwks.baseURL
            jwks.update { $0.userinfo = "{\"sub\":\"8f2e-1111\",\"email\":\"ada@example.com\"}" }
        }) { (env: TestEnvironment, collector: Collector) async throws in
            let token = PresetTests.cognitoAccessToken()
            env.jwks.update { $0.delay = .milliseconds(500) }  // the keys are in; the userinfo answer waits
            let second = String(Self.incomingTraceID.reversed())
            func send(_ trace: String) async throws -> Int {
                try await HTTP2Tests.curl(["-H", "traceparent: 00-\(trace)-\(Self.incomingParent)-01", "-H", "Authorization: Bearer \(token)",
                                           env.baseURL + "/x"]).status
            }
            async let first = send(Self.incomingTraceID)
            #expect(await Contract.eventually { env.jwks.userinfoCount == 1 }, "the first request's userinfo call is in flight")
            #expect(try await send(second) == 200)
            #expect(try await first == 200)
            #expect(env.jwks.userinfoCount == 1, "the second request joined the call")
            for (trace, cache, joined) in [(Self.incomingTraceID, "miss", false), (second, "hit", true)] {
                let spans = try await collector.spans(of: trace, count: 4, env)
                let userinfo = try #require(Self.span(spans, named: "gatehouse.userinfo"), "\(spans.map { $0["name"] })")
                #expect((Self.attribute(userinfo, "gatehouse.joined") == .bool(true)) == joined)
                #expect(Self.attribute(Self.span(spans, named: "gatehouse.verify"), "gatehouse.verification.cache") == .string(cache), "\(trace)")
            }
        }
    }

    @Test func anIntrospectionCallIsAChildSpan() async throws {
        let idp = try await TestIntrospectionIdP { _ in .init(body: TestIntrospectionIdP.active()) }
        try await Self.run(withKeys: IntrospectionTests.opaqueProvider { $0.introspection.endpoint = idp.endpoint }) {
            (env: TestEnvironment, collector: Collector) async throws in
            #expect(try await env.request("/read/x", token: "opaque-r", headers: [("traceparent", Self.incoming)]).status == 200)
            let spans = try await collector.spans(of: Self.incomingTraceID, count: 4, env)
            let server = try #require(spans.first { $0["kind"] == .number("2") })
            let call = try #require(Self.span(spans, named: "gatehouse.introspection"), "\(spans.map { $0["name"] })")
            #expect(call["parent_span_id"] == server["span_id"] && Self.attribute(call, "gatehouse.provider") == .string("opaque"))
            // The decision waited on the call: its verification was done now.
            let verified = try #require(Self.span(spans, named: "gatehouse.verify"))
            #expect(Self.attribute(verified, "gatehouse.verification.cache") == .string("miss"))
            let again = "00-\(String(Self.incomingTraceID.reversed()))-\(Self.incomingParent)-01"
            var arguments = ["--http2-prior-knowledge", "-H", "traceparent: \(again)", "-H", "Authorization: Bearer opaque-r"]
            arguments.append(env.baseURL + "/read/y")
            #expect(try await HTTP2Tests.curl(arguments).status == 200)
            let cached = try await collector.spans(of: String(Self.incomingTraceID.reversed()), count: 3, env)
            #expect(Self.span(cached, named: "gatehouse.introspection") == nil, "answered from the cache: \(cached.map { $0["name"] })")
            let fromCache = try #require(Self.span(cached, named: "gatehouse.verify"))
            #expect(Self.attribute(fromCache, "gatehouse.verification.cache") == .string("hit"))
            let metrics = try await env.admin("/metrics").body
            #expect(metrics.contains("gatehouse_http2_streams_total 1"), "\(metrics.split(separator: "\n").filter { $0.contains("http2") })")
        }
        await idp.close()
    }
}

extension Array where Element == UInt8 {
    func contains(_ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, needle.count <= count else { return false }
        return (0...(count - needle.count)).contains { self[$0..<($0 + needle.count)].elementsEqual(needle) }
    }
}
