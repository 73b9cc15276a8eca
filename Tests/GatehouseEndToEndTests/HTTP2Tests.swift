import Foundation
@testable import Gatehouse
import Testing
import GatehouseSyntax
import GatehouseConfig

/// Plain HTTP/2 on the client port, with curl as the client: prior knowledge on the cleartext
/// port (HTTP/1.1 keeps working there), ALPN `h2` with TLS, and `[listen] http2 = false`.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct HTTP2Tests {
    struct CurlResult {
        var version: String
        var status: Int
        var body: String
        var json: [String: JSONValue]? { try? StrictJSON.parse(Array(body.utf8)).objectValue }
    }

    /// One request with curl; `version` is curl's `%{http_version}` ("2", "1.1"), status 0 when none came.
    static func curl(_ arguments: [String]) async throws -> CurlResult {
        let (exitCode, output) = try await ChildProcess.runToEnd(
            ["/usr/bin/env", "curl", "-s", "-m", "10", "-w", "\n%{http_version} %{http_code}"] + arguments)
        // 127: /usr/bin/env found no curl. Every curl-based check would otherwise pass on an empty answer.
        try #require(exitCode != 127, "curl is not installed (scripts/test.sh installs it)")
        let lines = output.split(separator: "\n", omittingEmptySubsequences: false)
        let last = (lines.last ?? "").split(separator: " ")
        return CurlResult(
            version: last.first.map(String.init) ?? "", status: last.count > 1 ? Int(last[1]) ?? 0 : 0,
            body: lines.dropLast().joined(separator: "\n"))
    }

    static func token() -> String { TestSigner.ec.token(claims: Claims.valid()) }

    @Test func priorKnowledgeIsServedAsHTTP2WithTheSameDecisions() async throws {
        try await TestEnvironment.run { env in
            let url = env.baseURL + "/v1/orders"
            let admitted = try await Self.curl([
                "--http2-prior-knowledge", "-H", "Authorization: Bearer \(Self.token())", "-H", "X-Auth-Subject: admin",
                "-H", "x-auth_email: evil@example.com", url,
            ])
            #expect(admitted.version == "2")
            #expect(admitted.status == 200)
            let received = try #require(env.upstream.last)
            #expect(received.values("x-auth-subject") == ["user-1"])
            #expect(received.values("x-auth-email") == ["ada@example.com"])
            #expect(!received.headers.contains { $0.0 == "x-auth_email" })
            #expect(received.value("x-forwarded-proto") == "http")

            let refused = try await Self.curl(["--http2-prior-knowledge", url])
            #expect(refused.version == "2")
            #expect(refused.status == 401)
            #expect(refused.json?["reason"] == .string("missing_token"))
            #expect(env.failureLog.count == 1)
            #expect(env.failureLog.first?["path"] == .string("/v1/orders"))
            #expect(env.upstream.requestCount == 1)

            // A body streams through, and HTTP/1.1 on the same port is unchanged.
            let bodyFile = NSTemporaryDirectory() + "gatehouse-h2-body-" + UUID().uuidString
            try String(repeating: "x", count: 200_000).write(toFile: bodyFile, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(atPath: bodyFile) }
            let posted = try await Self.curl([
                "--http2-prior-knowledge", "-H", "Authorization: Bearer \(Self.token())", "--data-binary", "@" + bodyFile, url,
            ])
            #expect(posted.status == 200)
            #expect(env.upstream.last?.bodyBytes == 200_000)
            #expect(try await env.request("/v1/orders", token: Self.token()).status == 200)
        }
    }

    @Test func ownEndpointsAnswerOverHTTP2() async throws {
        try await TestEnvironment.run { env in
            let token = Self.token()
            let userinfo = try await Self.curl(["--http2-prior-knowledge", "-H", "Authorization: Bearer \(token)", env.baseURL + "/.gatehouse/userinfo"])
            #expect(userinfo.status == 200)
            #expect(userinfo.json?["sub"] == .string("user-1"))
            let check = try await Self.curl([
                "--http2-prior-knowledge", "-i", "-H", "Authorization: Bearer \(token)", "-H", "X-Forwarded-Uri: /v1/orders",
                env.baseURL + "/.gatehouse/check",
            ])
            #expect(check.status == 200)
            #expect(check.body.lowercased().contains("x-auth-subject: user-1"))
            let signOut = try await Self.curl(["--http2-prior-knowledge", "-X", "POST", "-H", "Authorization: Bearer \(token)", env.baseURL + "/.gatehouse/signout"])
            #expect(signOut.status == 200)
            let revoked = try await Self.curl(["--http2-prior-knowledge", "-H", "Authorization: Bearer \(token)", env.baseURL + "/v1/orders"])
            #expect(revoked.status == 401)
            #expect(revoked.json?["reason"] == .string("revoked"))
            let anonymous = try await Self.curl(["--http2-prior-knowledge", env.baseURL + "/.gatehouse/userinfo?secret=1"])
            #expect(anonymous.status == 401)
            #expect(env.failureLog.last?["path"] == .string("/.gatehouse/userinfo"))
            let unknown = try await Self.curl(["--http2-prior-knowledge", env.baseURL + "/.gatehouse/nothing"])
            #expect(unknown.status == 404)
            try await env.expectNothingReachedUpstream()
        }
    }

    @Test func http2CanBeTurnedOff() async throws {
        try await TestEnvironment.run(configure: { configuration, _ in configuration.listen.http2 = false }) { env in
            let attempt = try await Self.curl(["--http2-prior-knowledge", "-H", "Authorization: Bearer \(Self.token())", env.baseURL + "/v1/orders"])
            #expect(attempt.version != "2")
            try await env.expectNothingReachedUpstream()
            #expect(try await env.request("/v1/orders", token: Self.token()).status == 200)
        }
    }

    @Test func tlsListenerOffersH2ByALPN() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-h2-tls-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let files = try TLSListenerTests.makeCertificate(in: directory)
        for http2 in [true, false] {
            try await TestEnvironment.run(configure: { configuration, _ in
                configuration.listen.tlsCertificatePath = files.certificate
                configuration.listen.tlsKeyPath = files.key
                configuration.listen.http2 = http2
            }) { env in
                let result = try await Self.curl([
                    "--http2", "--cacert", files.certificate, "-H", "Authorization: Bearer \(Self.token())",
                    "https://127.0.0.1:\(env.port)/v1/orders",
                ])
                #expect(result.status == 200)
                #expect(result.version == (http2 ? "2" : "1.1"))
                #expect(env.upstream.last?.value("x-forwarded-proto") == "https")
            }
        }
    }

    /// `[upstream] protocol = "http2"`: HTTP/2 and HTTP/1.1 clients alike reach an HTTP/2-only
    /// upstream (plain HTTP; gRPC needs HTTP/2 on both sides), with the same identity headers.
    @Test func bothClientProtocolsReachAnHTTP2Upstream() async throws {
        try await TestEnvironment.run(upstreamHTTP2: true) { env in
            let token = Self.token()
            let overHTTP2 = try await Self.curl([
                "--http2-prior-knowledge", "-H", "Authorization: Bearer \(token)", "-H", "X-Auth-Subject: admin", env.baseURL + "/v1/orders",
            ])
            #expect(overHTTP2.status == 200)
            #expect(env.upstream.last?.values("x-auth-subject") == ["user-1"])
            // HTTP/1.1 client, keep-alive: two requests on one connection, then a refusal.
            let overHTTP1 = try await Self.curl([
                "--http1.1", "-H", "Authorization: Bearer \(token)", "-H", "X-Auth-Subject: admin", env.baseURL + "/v1/orders",
                "--next", "-s", "-w", "\n%{http_version} %{http_code}", "--http1.1", "-H", "Authorization: Bearer \(token)", env.baseURL + "/v1/other",
            ])
            #expect(overHTTP1.version == "1.1")
            #expect(overHTTP1.status == 200, "\(overHTTP1)")
            #expect(overHTTP1.body.contains("\n1.1 200{"), "the first request's answer: \(overHTTP1.body)")
            #expect(env.upstream.requestCount == 3)
            #expect(env.upstream.last?.uri == "/v1/other")
            #expect(env.upstream.requests.dropFirst().allSatisfy { $0.values("x-auth-subject") == ["user-1"] })
            let refused: TestEnvironment.Response
            do { refused = try await env.request("/v1/orders") } catch { Issue.record("refused: \(error)"); throw error }
            #expect(refused.status == 401)
            #expect(refused.json?["reason"] == .string("missing_token"))
            let chunked = try await env.request("/chunked", token: token)
            #expect(chunked.body == "one,two,three")
            #expect(env.upstream.requestCount == 4)
        }
    }

    /// Bodies many times a stream's high watermark (64 KiB) go through whole, both ways, over HTTP/2 on both sides: a
    /// stream's written bytes are handed back to it once they are on the socket (`HTTP2WriteLedger`, one promise per
    /// flush rather than one per DATA write); a stream never handed them back would stop at the watermark and be reset.
    @Test func bodiesManyTimesTheWatermarkGoThroughWholeBothWays() async throws {
        try await TestEnvironment.run(upstreamHTTP2: true) { env in
            let token = Self.token()
            let upload = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-h2-upload-\(UUID().uuidString)")
            try Data(repeating: 0x61, count: 8 << 20).write(to: upload)
            defer { try? FileManager.default.removeItem(at: upload) }
            let sent = try await Self.curl([
                "--http2-prior-knowledge", "-H", "Authorization: Bearer \(token)", "-H", "Content-Type: application/octet-stream",
                "--data-binary", "@" + upload.path, env.baseURL + "/v1/upload",
            ])
            #expect(sent.version == "2" && sent.status == 200, "\(sent.version) \(sent.status) \(sent.body.prefix(300))")
            #expect(sent.json?["body_bytes"] == .number(String(8 << 20)), "the upstream got every byte: \(sent.body.prefix(200))")

            let fetched = try await Self.curl(["--http2-prior-knowledge", "-H", "Authorization: Bearer \(token)", env.baseURL + "/large/8192"])
            #expect(fetched.version == "2" && fetched.status == 200, "\(fetched.version) \(fetched.status)")
            #expect(fetched.body.utf8.count == 8 << 20, "every byte of the answer came")
            #expect(fetched.body == String(repeating: "0123456789abcdef", count: 8192 * 64), "in order")
        }
    }

    /// A reload (SIGHUP) applies to the next stream.
    @Test func reloadAppliesToTheNextStream() async throws {
        try await TestEnvironment.run { env in
            let url = env.baseURL + "/v1/open"
            let before = try await Self.curl(["--http2-prior-knowledge", url])
            #expect(before.status == 401)
            var configuration = env.gatehouse.configuration
            var route = RouteSettings(match: .prefix("/v1/open"))
            route.auth = .public
            configuration.routes = [route]
            #expect(await env.gatehouse.reload(configuration).isEmpty)
            let after = try await Self.curl(["--http2-prior-knowledge", url])
            #expect(after.status == 200)
            #expect(after.version == "2")
        }
    }
}
