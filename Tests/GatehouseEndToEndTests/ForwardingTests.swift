import Foundation
@testable import Gatehouse
import NIOHTTP1
import Testing
import GatehouseConfig
import GatehouseAuth
import GatehouseExchange
import GatehouseProxy
import GatehouseExtAuthz

/// The proxy itself, on a public route: streaming, keep-alive, hop-by-hop hygiene, timeouts.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct ForwardingTests {
    static func publicEverywhere(_ configuration: inout Configuration, _ jwks: TestJWKSServer) {
        var route = RouteSettings(match: .prefix("/"))
        route.auth = .public
        configuration.routes = [route]
    }

    /// Public routes, and room for a loaded machine: the upstream's 504 must not come before the
    /// client's error in the tests that cut a request off.
    static func publicWithPatientUpstream(_ configuration: inout Configuration, _ jwks: TestJWKSServer) {
        publicEverywhere(&configuration, jwks)
        configuration.upstream.timeout = .seconds(10)
    }

    @Test func publicRouteIsForwardedWithForwardedHeadersAndRequestID() async throws {
        try await TestEnvironment.run(configure: Self.publicEverywhere) { (env: TestEnvironment) async throws in
            let response = try await env.request("/hello?x=1", headers: [("X-Forwarded-For", "203.0.113.9"), ("X-Request-Id", "abc-123")])
            #expect(response.status == 200)
            #expect(response.headers.first(name: "x-request-id") == "abc-123")
            let received = try #require(env.upstream.last)
            #expect(received.uri == "/hello?x=1")
            #expect(received.value("x-forwarded-for") == "203.0.113.9, 127.0.0.1")
            #expect(received.value("x-forwarded-proto") == "http")
            #expect(received.value("x-forwarded-host") == "127.0.0.1:\(env.port)")
            #expect(received.value("x-request-id") == "abc-123")
            #expect(env.failureLog.isEmpty)
        }
    }

    @Test func generatedRequestIDIsEchoedAndForwarded() async throws {
        try await TestEnvironment.run(configure: Self.publicEverywhere) { (env: TestEnvironment) async throws in
            let response = try await env.request("/x", headers: [("X-Request-Id", "bad id with spaces")])
            let id = try #require(response.headers.first(name: "x-request-id"))
            #expect(id.count == 32)
            #expect(env.upstream.last?.value("x-request-id") == id)
        }
    }

    @Test func upstreamRedirectIsPassedThroughNeverFollowed() async throws {
        try await TestEnvironment.run(configure: Self.publicEverywhere) { (env: TestEnvironment) async throws in
            let response = try await env.request("/redirect")
            #expect(response.status == 302)
            #expect(response.headers.first(name: "location") == "http://169.254.169.254/latest/meta-data/")
            #expect(env.upstream.requestCount == 1)
        }
    }

    @Test func chunkedUpstreamResponseStreamsThrough() async throws {
        try await TestEnvironment.run(configure: Self.publicEverywhere) { (env: TestEnvironment) async throws in
            let response = try await env.request("/chunked")
            #expect(response.status == 200)
            #expect(response.body == "one,two,three")
        }
    }

    @Test func slowUpstreamGets504() async throws {
        try await TestEnvironment.run(configure: Self.publicEverywhere) { (env: TestEnvironment) async throws in
            let started = ContinuousClock.now
            let response = try await env.request("/slow")
            #expect(response.status == 504)
            #expect(ContinuousClock.now - started < .seconds(2))
            #expect(env.failureLog.isEmpty)
        }
    }

    @Test func unreachableUpstreamGets502() async throws {
        try await TestEnvironment.run(configure: { configuration, jwks in
            Self.publicEverywhere(&configuration, jwks)
            configuration.upstream.url = URL(string: "http://127.0.0.1:9")!
        }) { (env: TestEnvironment) async throws in
            let response = try await env.request("/anything")
            #expect(response.status == 502)
            #expect(env.failureLog.isEmpty)
        }
    }

    @Test func requestBodyStreamsToUpstream() async throws {
        try await TestEnvironment.run(configure: Self.publicEverywhere) { (env: TestEnvironment) async throws in
            let body = String(repeating: "x", count: 3 << 20)
            let response = try await env.request("/upload", method: .POST, body: body)
            #expect(response.status == 200)
            #expect(env.upstream.last?.bodyBytes == 3 << 20)
        }
    }

    @Test func pipelinedRequestsAreAnsweredInOrder() async throws {
        try await TestEnvironment.run(configure: Self.publicEverywhere) { (env: TestEnvironment) async throws in
            let request = "GET /one HTTP/1.1\r\nHost: a\r\n\r\nGET /two HTTP/1.1\r\nHost: a\r\n\r\nGET /three HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
            let text = RawHTTP.exchange(port: env.port, request)
            #expect(RawHTTP.statuses(text) == [200, 200, 200])
            let one = try #require(text.range(of: "\"uri\":\"/one\""))
            let two = try #require(text.range(of: "\"uri\":\"/two\""))
            let three = try #require(text.range(of: "\"uri\":\"/three\""))
            #expect(one.lowerBound < two.lowerBound && two.lowerBound < three.lowerBound)
        }
    }

    @Test func hopByHopHeadersAreNotForwarded() async throws {
        try await TestEnvironment.run(configure: Self.publicEverywhere) { (env: TestEnvironment) async throws in
            _ = try await env.request("/x", headers: [("Connection", "X-Secret"), ("X-Secret", "1"), ("Keep-Alive", "timeout=5"), ("Proxy-Authorization", "Basic x")])
            let received = try #require(env.upstream.last)
            #expect(received.value("x-secret") == nil)
            #expect(received.value("keep-alive") == nil)
            #expect(received.value("proxy-authorization") == nil)
        }
    }

    /// An upstream's hop-by-hop response fields (`Trailer`, `Proxy-*`, what its `Connection` names) reach no client,
    /// whatever the upstream protocol and the door: one list for every path (`ResponseFields`, `HeaderHygiene`; found in
    /// review: an HTTP/2 upstream's were relayed as they came).
    @Test(arguments: [UpstreamProtocol.http1, .http2])
    func hopByHopResponseFieldsReachNoClient(_ upstream: UpstreamProtocol) async throws {
        try await TestEnvironment.run(upstreamHTTP2: upstream == .http2, configure: Self.publicEverywhere) { (env: TestEnvironment) async throws in
            let http1 = try await env.request("/hop-by-hop")
            #expect(http1.status == 200 && http1.headers.first(name: "x-kept") == "yes", "\(http1.headers)")
            let (exitCode, dump) = try await ChildProcess.runToEnd(
                ["/usr/bin/env", "curl", "-s", "-m", "10", "--http2-prior-knowledge", "-D", "-", "-o", "/dev/null", env.baseURL + "/hop-by-hop"])
            try #require(exitCode == 0, "curl: \(dump)")
            let http2 = dump.lowercased()
            #expect(http2.hasPrefix("http/2 200") && http2.contains("x-kept: yes"), "\(dump)")
            for name in ["trailer", "proxy-agent", "x-drop"] {
                #expect(http1.headers.first(name: name) == nil, "\(upstream) to HTTP/1.1: \(name) in \(http1.headers)")
                #expect(!http2.contains("\n\(name):"), "\(upstream) to HTTP/2: \(name) in \(dump)")
            }
            // The upstream's own request id is replaced by Gatehouse's on both doors (docs/security.md P39).
            let ids = http1.headers[canonicalForm: "x-request-id"]
            #expect(ids.count == 1 && ids.first != "upstream-id", "\(upstream) to HTTP/1.1: \(ids)")
            let http2IDs = http2.split(whereSeparator: \.isNewline).filter { $0.hasPrefix("x-request-id:") }
            #expect(http2IDs.count == 1 && !http2.contains("upstream-id"), "\(upstream) to HTTP/2: \(dump)")
        }
    }

    @Test func webSocketUpgradeIsTunnelledAfterUpstream101() async throws {
        try await TestEnvironment.run(configure: Self.publicEverywhere) { (env: TestEnvironment) async throws in
            let connection = try #require(RawHTTP.Connection(port: env.port, timeout: .seconds(2)))
            connection.send("GET /ws HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
            let handshake = connection.receive(until: "\r\n\r\n")
            #expect(handshake.hasPrefix("HTTP/1.1 101"))
            connection.send("ping-bytes")
            #expect(connection.receive(until: "ping-bytes") == "ping-bytes")
            connection.send("second")
            #expect(connection.receive(until: "second") == "second")
            #expect(env.upstream.last?.value("upgrade") == "websocket")
        }
    }

    @Test func h2cUpgradeIsNeverTunnelled() async throws {
        try await TestEnvironment.run(configure: Self.publicEverywhere) { (env: TestEnvironment) async throws in
            let request = "GET /plain HTTP/1.1\r\nHost: a\r\nUpgrade: h2c\r\nConnection: Upgrade, HTTP2-Settings\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n"
            let text = RawHTTP.exchange(port: env.port, request, timeout: .seconds(1))
            #expect(RawHTTP.statuses(text) == [200])
            let received = try #require(env.upstream.last)
            #expect(received.value("upgrade") == nil)
            #expect(received.value("http2-settings") == nil)
        }
    }

    @Test func oversizedRequestHeadGets431() async throws {
        try await TestEnvironment.run(configure: Self.publicEverywhere) { (env: TestEnvironment) async throws in
            let big = String(repeating: "a", count: 20_000)
            let text = RawHTTP.exchange(port: env.port, "GET / HTTP/1.1\r\nHost: a\r\nX-Big: \(big)\r\n\r\n")
            #expect(RawHTTP.statuses(text) == [431])
            try await env.expectNothingReachedUpstream()
        }
    }

    @Test func headResponseHasNoBodyAndConnectionStaysUsable() async throws {
        try await TestEnvironment.run(configure: Self.publicEverywhere) { (env: TestEnvironment) async throws in
            let text = RawHTTP.exchange(port: env.port, "HEAD /a HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
            #expect(RawHTTP.statuses(text) == [200, 200])
            #expect(!text.contains("\"uri\":\"/a\""))
            #expect(text.contains("\"uri\":\"/b\""))
        }
    }

    /// An upstream's `100 Continue` reaches an HTTP/1.1 client, which sends its body then; with either upstream protocol
    /// (an `http2` upstream's interim HEADERS is relayed the same way: one driver, the core's 1xx rule).
    @Test(arguments: [false, true])
    func expectContinueIsRelayedSoTheClientSendsItsBody(upstreamHTTP2: Bool) async throws {
        try await TestEnvironment.run(upstreamHTTP2: upstreamHTTP2, configure: Self.publicEverywhere) { (env: TestEnvironment) async throws in
            let connection = try #require(RawHTTP.Connection(port: env.port, timeout: .seconds(2)))
            connection.send("POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
            #expect(connection.receive(until: "\r\n\r\n").hasPrefix("HTTP/1.1 100 Continue"))
            connection.send("hello")
            let response = connection.receive(until: "}")
            #expect(response.contains("HTTP/1.1 200 OK"))
            #expect(response.contains("\"body_bytes\":5"))
        }
    }

    @Test func http10ClientGetsAResponseItCanFrame() async throws {
        try await TestEnvironment.run(configure: Self.publicEverywhere) { (env: TestEnvironment) async throws in
            let text = RawHTTP.exchange(port: env.port, "GET /chunked HTTP/1.0\r\n\r\n")
            #expect(text.hasPrefix("HTTP/1.0 200 OK"))
            #expect(text.hasSuffix("one,two,three"))
            #expect(!text.lowercased().contains("transfer-encoding"))
        }
    }

    @Test func upstreamAnsweringBeforeTheBodyEndsClosesTheClientConnection() async throws {
        try await TestEnvironment.run(configure: Self.publicEverywhere) { (env: TestEnvironment) async throws in
            let connection = try #require(RawHTTP.Connection(port: env.port, timeout: .seconds(2)))
            connection.send("POST /early HTTP/1.1\r\nHost: a\r\nContent-Length: 1000000\r\n\r\n" + String(repeating: "x", count: 1000))
            let response = connection.receive()
            #expect(RawHTTP.statuses(response) == [413])
        }
    }

    @Test func clientThatHalfClosesAfterItsRequestStillGetsTheResponse() async throws {
        try await TestEnvironment.run(configure: Self.publicEverywhere) { (env: TestEnvironment) async throws in
            let connection = try #require(RawHTTP.Connection(port: env.port, timeout: .seconds(2)))
            connection.send("GET /half HTTP/1.1\r\nHost: a\r\n\r\n")
            shutdown(connection.descriptor, Int32(SHUT_WR))
            let response = connection.receive()
            #expect(RawHTTP.statuses(response) == [200])
            #expect(response.contains("\"uri\":\"/half\""))
        }
    }

    /// The door keeps reading while a request is at the upstream (its socket's read interest is never dropped): a next
    /// request that comes then waits for the answer in hand and is answered after it, in order, and a half-close that
    /// comes then still lets the answer out whole before the connection closes.
    @Test(arguments: [false, true])
    func whatTheClientSendsWhileItsRequestIsAtTheUpstreamWaitsForTheAnswer(halfCloses: Bool) async throws {
        try await TestEnvironment.run(configure: Self.publicWithPatientUpstream) { (env: TestEnvironment) async throws in
            let connection = try #require(RawHTTP.Connection(port: env.port, timeout: .seconds(6)))
            connection.send("GET /slow HTTP/1.1\r\nHost: a\r\n\r\n")
            #expect(await Contract.eventually { env.upstream.traffic.heads == 1 }, "the request is at the upstream")
            if halfCloses {
                shutdown(connection.descriptor, Int32(SHUT_WR))
            } else {
                connection.send("GET /next HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
            }
            let text = connection.receive()
            #expect(RawHTTP.statuses(text) == (halfCloses ? [200] : [200, 200]), "\(text)")
            let slow = try #require(text.range(of: "\r\n\r\nslow"))
            if !halfCloses {
                let next = try #require(text.range(of: "\"uri\":\"/next\""))
                #expect(slow.upperBound < next.lowerBound)
            }
            #expect(connection.peerClosed)
        }
    }

    /// docs/security.md P52: a client that half-closes in the middle of its body has cut the request
    /// short: 400, and the upstream connection holding the half request is closed, never completed.
    @Test func aClientThatHalfClosesMidBodyGets400AndTheUpstreamConnectionIsClosed() async throws {
        try await TestEnvironment.run(configure: Self.publicWithPatientUpstream) { (env: TestEnvironment) async throws in
            let connection = try #require(RawHTTP.Connection(port: env.port, timeout: .seconds(5)))
            connection.send("POST /upload HTTP/1.1\r\nHost: example.test\r\nContent-Length: 10\r\n\r\nabc")
            // Forwarded: the head and the first bytes are at the upstream.
            for _ in 0..<500 where env.upstream.traffic.heads == 0 { try await Task.sleep(for: .milliseconds(10)) }
            #expect(env.upstream.traffic.heads == 1)
            shutdown(connection.descriptor, Int32(SHUT_WR))
            #expect(connection.receive().hasPrefix("HTTP/1.1 400"))
            for _ in 0..<200 where env.upstream.closedConnections == 0 { try await Task.sleep(for: .milliseconds(10)) }
            #expect(env.upstream.closedConnections == 1)
            #expect(env.upstream.requestCount == 0, "the half request was never completed upstream")
        }
    }

    @Test func aClientErrorMidRequestReleasesTheUpstreamConnection() async throws {
        try await TestEnvironment.run(configure: Self.publicWithPatientUpstream) { (env: TestEnvironment) async throws in
            let connection = try #require(RawHTTP.Connection(port: env.port, timeout: .seconds(5)))
            connection.send("POST /upload HTTP/1.1\r\nHost: example.test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
            // Forwarded: the head and the first chunk are at the upstream.
            for _ in 0..<500 where env.upstream.traffic.heads == 0 { try await Task.sleep(for: .milliseconds(10)) }
            #expect(env.upstream.traffic.heads == 1)
            connection.send("zz\r\n")  // not a chunk size
            #expect(connection.receive().hasPrefix("HTTP/1.1 400"))
            // The upstream connection carrying the half-sent request is closed, not left waiting for the rest.
            for _ in 0..<200 where env.upstream.closedConnections == 0 { try await Task.sleep(for: .milliseconds(10)) }
            #expect(env.upstream.closedConnections == 1)
            #expect(env.upstream.requestCount == 0, "the half request was never completed upstream")
        }
    }

    /// docs/security.md P55: a client that connects and half-closes without a byte (a port scanner, a TCP
    /// health check, the queue of a listener that was out of descriptors) is closed at once, not held
    /// for `idle_timeout`; one that sent a few bytes first gets its answer (400 here) before the close.
    @Test func aClientThatHalfClosesBeforeAnyRequestIsClosedAtOnce() async throws {
        try await TestEnvironment.run(configure: { configuration, _ in configuration.listen.idleTimeout = .seconds(30) }) {
            (env: TestEnvironment) async throws in
            let started = ContinuousClock.now
            let silent = try #require(RawHTTP.Connection(port: env.port, timeout: .seconds(10)))
            shutdown(silent.descriptor, Int32(SHUT_WR))
            #expect(silent.receive() == "")
            #expect(ContinuousClock.now - started < .seconds(5), "closed by Gatehouse, not by the 10 s receive timeout")
            let partial = try #require(RawHTTP.Connection(port: env.port, timeout: .seconds(10)))
            partial.send("GE")
            shutdown(partial.descriptor, Int32(SHUT_WR))
            #expect(partial.receive().hasPrefix("HTTP/1.1 400"))
            #expect(ContinuousClock.now - started < .seconds(5))
            try await env.expectNothingReachedUpstream()
        }
    }
}
