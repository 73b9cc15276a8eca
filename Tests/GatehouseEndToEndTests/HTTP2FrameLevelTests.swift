import Foundation
import NIOHTTP1
@testable import Gatehouse
import Testing
import GatehouseSyntax
import GatehouseConfig

/// What Gatehouse's frame-level HTTP/2 connections do themselves, with no stream multiplexer to do it
/// for them: flow control (a request body the upstream cannot take yet is held back at the client by the
/// stream's window, not buffered in Gatehouse, and the window opens again as the upstream reads) and the
/// upstream's stream states (a refused stream is sent again).
@Suite(.serialized, .timeLimit(.minutes(2)))
struct HTTP2FrameLevelTests {
    static let bodySize = 16 << 20

    @Test func aBodyTheUpstreamDoesNotReadIsHeldAtTheClientThenArrivesWhole() async throws {
        let releaseFile = NSTemporaryDirectory() + "gatehouse-sink-release-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: releaseFile) }
        let (sink, sinkPort) = try await PythonPeer.startServer(
            "h2", "slow_sink.py", ["--release-file", releaseFile], what: "the slow upstream")
        defer { ChildProcess.stop(sink, grace: .zero) }
        try await TestEnvironment.run(configure: { configuration, _ in
            configuration.upstream.url = URL(string: "http://127.0.0.1:\(sinkPort)")!
            configuration.upstream.timeout = .seconds(30)
        }) { env in
            let token = TestSigner.ec.token(claims: Claims.valid())
            let report = try await PythonPeer.runJSON("h2", "upload.py", [
                "--port", String(env.port), "--token", token, "--size", String(Self.bodySize), "--stall", "0.5", "--limit", "10",
                "--release-file", releaseFile,
            ])
            // While the upstream read nothing, the client was held back by the stream's window once it had
            // sent the window and what the sockets on the way hold: far from the whole body.
            let heldAt = try #require(report["sent_at_release"]?.integerValue)
            #expect(report["stalled"]?.boolValue == true, "the client was never held back: \(report)")
            #expect(heldAt > 0 && heldAt < Int64(Self.bodySize) / 2, "the client sent \(heldAt) bytes to an upstream that read none: \(report)")
            // Then the upstream read: the window reopened until everything was through.
            #expect(report["sent"]?.integerValue == Int64(Self.bodySize), "\(report)")
            #expect(report["status"]?.integerValue == 200, "\(report)")
            #expect(report["body"]?.stringValue == String(Self.bodySize), "the upstream's count of body bytes: \(report)")
        }
    }

    /// A stream the HTTP/2 upstream refused (REFUSED_STREAM: not processed) is sent again once on the
    /// frame-level upstream connection, whatever its method, when there is nothing of it to send again
    /// but its head (a body already sent is not kept for a replay).
    @Test func aStreamTheUpstreamRefusedIsSentAgainOnce() async throws {
        try await Self.withPythonUpstream("refusing_upstream.py", what: "the refusing upstream") { env in
            let token = TestSigner.ec.token(claims: Claims.valid())
            let get = try await env.request("/v1/refused-get", token: token)
            #expect(get.status == 200 && get.body == "GET /v1/refused-get attempt 2", "\(get.status) \(get.body)")
            let post = try await env.request("/v1/refused-post", method: .POST, token: token)
            #expect(post.status == 200 && post.body == "POST /v1/refused-post attempt 2", "\(post.status) \(post.body)")
        }
    }

    /// H24: an HTTP/2 upstream's malformed response (RFC 9113 §8.2.1: CR LF in a value, NUL, an upper-case name, a
    /// space in a name, a value starting with a space, a field before `:status`; a 101, which HTTP/2 has not, §8.6)
    /// is a 502 for HTTP/1.1 and HTTP/2 clients, and no byte of it reaches them: above all no second header line out of a value's CR LF (response
    /// splitting). Malformed trailers after a sound head cut the response (no last chunk, a reset stream). Gatehouse
    /// reads these blocks itself (`HTTP2UpstreamLeg.isWellFormed`): NIO's validation is off on upstream connections.
    @Test func aMalformedResponseFromAnHTTP2UpstreamReachesNoClient() async throws {
        try await Self.withPythonUpstream("malformed_upstream.py", what: "the malformed upstream") { env in
            let token = TestSigner.ec.token(claims: Claims.valid())
            let paths = ["/crlf", "/nul", "/upper", "/space-name", "/lead-space", "/status-late", "/switching"]
            for path in paths {
                let raw = RawHTTP.exchange(
                    port: env.port, "GET \(path) HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(token)\r\nConnection: close\r\n\r\n")
                #expect(RawHTTP.statuses(raw) == [502], "HTTP/1.1 \(path): \(raw)")
                #expect(!raw.lowercased().contains("evil") && !raw.contains("x-injected") && !raw.contains("X-Upper"), "HTTP/1.1 \(path): \(raw)")
            }
            let answers = try await HTTP2IntakeTests.send(
                paths.map { .init(name: $0, headers: HTTP2IntakeTests.block(env, path: $0, token: token)) }, to: env)
            for path in paths {
                let answer = answers[path]
                #expect(answer?.status == 502, "HTTP/2 \(path): \(String(describing: answer))")
                #expect(answer.map { !$0.headers.contains { $0.0 == "x-injected" || $0.0 == "set-cookie" } } == true, "HTTP/2 \(path)")
            }

            let cut = RawHTTP.exchange(
                port: env.port, "GET /trailer-crlf HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(token)\r\nConnection: close\r\n\r\n")
            #expect(RawHTTP.statuses(cut) == [200] && !cut.hasSuffix("0\r\n\r\n") && !cut.lowercased().contains("evil"), "HTTP/1.1: \(cut)")
            let trailers = try await HTTP2IntakeTests.send(
                [.init(name: "trailers", headers: HTTP2IntakeTests.block(env, path: "/trailer-crlf", token: token))], to: env)
            #expect(trailers["trailers"]?.resetCode != nil, "HTTP/2: the stream is reset, not ended: \(String(describing: trailers["trailers"]))")
            // The same upstream's sound answers still go through.
            #expect(try await env.request("/fine", token: token).status == 200)
        }
    }

    /// An HTTP/2 upstream that answers before a request's body has come and then resets the stream (NO_ERROR, RFC 9113
    /// §8.1: nginx answering with `return`) keeps its pooled connection: 300 such requests in a row are all answered on
    /// the first connection. NIO counted those resets against its rapid-reset budget (200 in 30 s) and ended the
    /// connection every 200 requests (found as 146 reconnects in 5 s of gRPC load through nginx).
    @Test func anUpstreamThatResetsAnsweredStreamsKeepsItsConnection() async throws {
        try await Self.withPythonUpstream("malformed_upstream.py", what: "the resetting upstream") { env in
            let token = TestSigner.ec.token(claims: Claims.valid())
            let head = HTTP2IntakeTests.block(env, method: "POST", path: "/then-reset", token: token, [("content-length", "5")])
            // The body's first bytes, and the stream left open: the upstream answers while the rest is still to come.
            let answers = try await HTTP2IntakeTests.send(
                (0..<300).map { .init(name: "r\($0)", headers: head, body: "hel", open: true) }, to: env)
            let statuses = answers.values.map(\.status)
            let connections = Set(answers.values.compactMap { $0.value("x-connection") })
            #expect(answers.count == 300 && statuses.allSatisfy { $0 == 200 }, "\(statuses.filter { $0 != 200 })")
            #expect(connections == ["1"], "answered on upstream connections \(connections.sorted())")
        }
    }

    /// Gatehouse in front of one of the tests' HTTP/2 upstreams in Python (Resources/h2), `protocol = "http2"`.
    /// H25: an HTTP/2 upstream that floods Gatehouse's connection to it (1 000 PINGs, 1 000 SETTINGS frames, or a head
    /// then empty DATA frames that never end the stream): the flood rules hold on upstream connections as on the
    /// client port. Gatehouse ends that connection with GOAWAY ENHANCE_YOUR_CALM and closes it; the request in flight
    /// is answered 502 (or, after its head, cut), never left hanging; the next request is served on a new connection.
    @Test(arguments: ["ping", "settings", "empty-data"])
    func anUpstreamThatFloodsItsConnectionIsCutAndTheNextRequestServed(_ kind: String) async throws {
        try await Self.withPythonUpstream("flooding_upstream.py", what: "the flooding upstream") { env in
            let token = TestSigner.ec.token(claims: Claims.valid())
            let raw = RawHTTP.exchange(
                port: env.port, "GET /flood/\(kind) HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(token)\r\nConnection: close\r\n\r\n")
            if kind == "empty-data" {
                #expect(RawHTTP.statuses(raw) == [200] && !raw.hasSuffix("0\r\n\r\n"), "the answer must be cut: \(raw)")
            } else {
                #expect(RawHTTP.statuses(raw) == [502], "\(kind): \(raw)")
            }
            let next = try await env.request("/after-\(kind)", token: token)
            #expect(next.status == 200 && next.body == "goaway 11", "\(kind): the flooded connection ended with \(next.body)")
        }
    }

    static func withPythonUpstream(_ script: String, what: String, _ body: (TestEnvironment) async throws -> Void) async throws {
        let (upstream, upstreamPort) = try await PythonPeer.startServer("h2", script, [], what: what)
        defer { ChildProcess.stop(upstream, grace: .zero) }
        try await TestEnvironment.run(configure: { configuration, _ in
            configuration.upstream.url = URL(string: "http://127.0.0.1:\(upstreamPort)")!
            configuration.upstream.protocolVersion = .http2
        }, body)
    }
}
