import Foundation
@testable import Gatehouse
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing
import GatehouseSyntax
import GatehouseConfig
import GatehouseTelemetry
import GatehouseExchange
import GatehouseProxy
import GatehouseExtAuthz

/// How upstream responses reach the client, byte for byte: pipelining, re-framing, refused upstream
/// framings, and the upstream connections that must not be reused. The upstream here answers with
/// exact bytes (`RawUpstream`), so every response no HTTP library would write can be sent.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct ResponseRelayTests {
    // MARK: - Pipelining

    @Test func pipelinedRequestsWithTokensAreAnsweredInOrderOnOneConnection() async throws {
        try await Self.withRawUpstream([:], publicRoutes: false) { (env: TestEnvironment, upstream: RawUpstream) async throws in
            let token = TestSigner.ec.token(claims: Claims.valid())
            let auth = [("Authorization", "Bearer \(token)")]
            let connection = try #require(RawHTTP.Connection(port: env.port, timeout: .seconds(3)))
            connection.send(Self.get("/one", id: "a1", headers: auth) + Self.get("/two", id: "a2", headers: auth)
                + Self.get("/three", id: "a3", headers: auth, close: true))
            let expected = Self.echo("/one", id: "a1") + Self.echo("/two", id: "a2") + Self.echo("/three", id: "a3", close: true)
            #expect(connection.receive() == expected)
            #expect(connection.peerClosed)
            #expect(upstream.targets == ["/one", "/two", "/three"])
            #expect(upstream.accepted == 1)
        }
    }

    @Test func pipelinedLocalAnswersAndForwardedResponsesStayInOrder() async throws {
        try await Self.withRawUpstream([:], publicRoutes: false) { (env: TestEnvironment, upstream: RawUpstream) async throws in
            let auth = [("Authorization", "Bearer \(TestSigner.ec.token(claims: Claims.valid()))")]
            let connection = try #require(RawHTTP.Connection(port: env.port, timeout: .seconds(3)))
            connection.send(Self.get("/one", id: "m1", headers: auth) + Self.get("/two", id: "m2") + Self.get("/three", id: "m3", headers: auth)
                + Self.get("/four", id: "m4", close: true))
            let expected = Self.echo("/one", id: "m1") + Self.missingToken(id: "m2") + Self.echo("/three", id: "m3")
                + Self.missingToken(id: "m4", close: true)
            #expect(connection.receive() == expected)
            #expect(connection.peerClosed)
            #expect(upstream.targets == ["/one", "/three"])
        }
    }

    @Test func pipelinedRequestsAreAllAnsweredWhenTheClientHalfClosesRightAfterSendingThem() async throws {
        try await Self.withRawUpstream([:]) { (env: TestEnvironment, upstream: RawUpstream) async throws in
            let connection = try #require(RawHTTP.Connection(port: env.port, timeout: .seconds(3)))
            connection.send(Self.get("/one", id: "a1") + Self.get("/two", id: "a2") + Self.get("/three", id: "a3"))
            shutdown(connection.descriptor, Int32(SHUT_WR))
            let expected = Self.echo("/one", id: "a1") + Self.echo("/two", id: "a2") + Self.echo("/three", id: "a3")
            #expect(connection.receive() == expected)
            #expect(connection.peerClosed)
            #expect(upstream.targets == ["/one", "/two", "/three"])
        }
    }

    // MARK: - Re-framing

    @Test func chunkedWithContentLengthIsRechunkedAndItsUpstreamConnectionNotReused() async throws {
        let replies = ["/te-cl": RawUpstream.Reply(
            "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\nX-Kind: te-cl\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")]
        try await Self.withRawUpstream(replies) { (env: TestEnvironment, upstream: RawUpstream) async throws in
            let connection = try #require(RawHTTP.Connection(port: env.port, timeout: .seconds(3)))
            connection.send(Self.get("/te-cl", id: "b1"))
            let response = try #require(Self.splitHead(connection.receive(until: "\r\n0\r\n\r\n")))
            #expect(response.head == "HTTP/1.1 200 OK\r\nX-Kind: te-cl\r\nX-Request-Id: b1\r\nTransfer-Encoding: chunked\r\n\r\n")
            #expect(Self.dechunk(response.body) == "hello world")

            connection.send(Self.get("/next", id: "b2", close: true))
            #expect(connection.receive() == Self.echo("/next", id: "b2", close: true))
            #expect(upstream.targets == ["/te-cl", "/next"])
            #expect(upstream.accepted == 2)
            #expect(try await Self.eventually { upstream.closed >= 1 }, "the upstream connection of the TE+CL response stays open")
        }
    }

    @Test func closeDelimitedBodyIsRechunkedForAnHTTP11ClientThatKeepsItsConnection() async throws {
        let replies = ["/until-close": RawUpstream.Reply("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nstreamed until close", thenClose: true)]
        try await Self.withRawUpstream(replies) { (env: TestEnvironment, upstream: RawUpstream) async throws in
            let connection = try #require(RawHTTP.Connection(port: env.port, timeout: .seconds(3)))
            connection.send(Self.get("/until-close", id: "e2"))
            let response = try #require(Self.splitHead(connection.receive(until: "\r\n0\r\n\r\n")))
            #expect(response.head == "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Request-Id: e2\r\nTransfer-Encoding: chunked\r\n\r\n")
            #expect(Self.dechunk(response.body) == "streamed until close")

            connection.send(Self.get("/next", id: "e3", close: true))
            #expect(connection.receive() == Self.echo("/next", id: "e3", close: true))
            #expect(upstream.accepted == 2)
        }
    }

    @Test(arguments: ["", "Connection: keep-alive\r\n"])
    func http10ClientGetsAChunkedUpstreamBodyDelimitedByTheClose(connectionHeader: String) async throws {
        let replies = ["/chunked": RawUpstream.Reply(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")]
        try await Self.withRawUpstream(replies) { (env: TestEnvironment, upstream: RawUpstream) async throws in
            let connection = try #require(RawHTTP.Connection(port: env.port, timeout: .seconds(3)))
            connection.send("GET /chunked HTTP/1.0\r\nX-Request-Id: e1\r\n\(connectionHeader)\r\n")
            #expect(connection.receive() == "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nX-Request-Id: e1\r\nConnection: close\r\n\r\nhello world")
            #expect(connection.peerClosed)
            #expect(upstream.targets == ["/chunked"])
        }
    }

    @Test func http10ClientAskingForKeepAliveKeepsItsConnectionForALengthDelimitedBody() async throws {
        try await Self.withRawUpstream([:]) { (env: TestEnvironment, upstream: RawUpstream) async throws in
            let connection = try #require(RawHTTP.Connection(port: env.port, timeout: .seconds(3)))
            connection.send("GET /one HTTP/1.0\r\nX-Request-Id: k1\r\nConnection: keep-alive\r\n\r\n")
            let first = "HTTP/1.0 200 OK\r\nContent-Length: 4\r\nX-Request-Id: k1\r\nConnection: keep-alive\r\n\r\n/one"
            #expect(connection.receive(until: first) == first)
            connection.send("GET /two HTTP/1.0\r\nX-Request-Id: k2\r\n\r\n")
            #expect(connection.receive() == "HTTP/1.0 200 OK\r\nContent-Length: 4\r\nX-Request-Id: k2\r\nConnection: close\r\n\r\n/two")
            #expect(connection.peerClosed)
            #expect(upstream.accepted == 1)
        }
    }

    /// RFC 9110 §15.2: HTTP/1.0 defines no 1xx, so an HTTP/1.0 client must never get one; an HTTP/1.1 client gets them all.
    @Test func informationalResponsesReachHTTP11ClientsButNotHTTP10Ones() async throws {
        let replies = ["/hints": RawUpstream.Reply(
            "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")]
        try await Self.withRawUpstream(replies) { (env: TestEnvironment, upstream: RawUpstream) async throws in
            let eleven = try #require(RawHTTP.Connection(port: env.port, timeout: .seconds(3)))
            eleven.send(Self.get("/hints", id: "i1", close: true))
            #expect(eleven.receive() == "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\nX-Request-Id: i1\r\n\r\n"
                + "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Request-Id: i1\r\nConnection: close\r\n\r\nok")

            let ten = try #require(RawHTTP.Connection(port: env.port, timeout: .seconds(3)))
            ten.send("GET /hints HTTP/1.0\r\nX-Request-Id: i2\r\n\r\n")
            #expect(ten.receive() == "HTTP/1.0 200 OK\r\nContent-Length: 2\r\nX-Request-Id: i2\r\nConnection: close\r\n\r\nok")
        }
    }

    @Test func answerToAForwardedHEADHasNoBodyAndTheUpstreamConnectionIsReused() async throws {
        let replies = ["/head": RawUpstream.Reply("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\n")]
        try await Self.withRawUpstream(replies) { (env: TestEnvironment, upstream: RawUpstream) async throws in
            let connection = try #require(RawHTTP.Connection(port: env.port, timeout: .seconds(3)))
            connection.send("HEAD /head HTTP/1.1\r\nHost: a\r\nX-Request-Id: h1\r\n\r\n" + Self.get("/after", id: "h2", close: true))
            let expected = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\nX-Request-Id: h1\r\n\r\n"
                + Self.echo("/after", id: "h2", close: true)
            #expect(connection.receive() == expected)
            #expect(upstream.targets == ["/head", "/after"])
            #expect(upstream.accepted == 1)
        }
    }

    // MARK: - Upstream framing that cannot be trusted

    @Test(arguments: [
        "HTTP/1.1 200 OK\r\nX-A: 1\nX-B: 2\r\nContent-Length: 2\r\n\r\nok",
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\nContent-Length: 2\r\n\r\nok",
    ])
    func malformedUpstreamResponseGets502AndItsConnectionIsClosedNotRetried(reply: String) async throws {
        try await Self.withRawUpstream(["/bad": RawUpstream.Reply(reply)]) { (env: TestEnvironment, upstream: RawUpstream) async throws in
            let connection = try #require(RawHTTP.Connection(port: env.port, timeout: .seconds(3)))
            // A first response makes the connection a reused one for `/bad`: its failure must still not be retried.
            connection.send(Self.get("/ok", id: "c1"))
            let ok = Self.echo("/ok", id: "c1")
            #expect(connection.receive(until: ok) == ok)

            connection.send(Self.get("/bad", id: "c2"))
            let body = "{\"error\":\"upstream_unavailable\",\"request_id\":\"c2\"}"
            let badGateway = "HTTP/1.1 502 Bad Gateway\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n"
                + "X-Request-Id: c2\r\n\r\n\(body)"
            #expect(connection.receive(until: badGateway) == badGateway)
            #expect(try await Self.eventually { upstream.closed == 1 }, "the connection that carried the bad response stays open")

            connection.send(Self.get("/ok2", id: "c3", close: true))
            #expect(connection.receive() == Self.echo("/ok2", id: "c3", close: true))
            #expect(upstream.targets == ["/ok", "/bad", "/ok2"])
            #expect(upstream.accepted == 2)
        }
    }

    @Test func reusedConnectionClosedWithoutAnAnswerIsRetriedOnceOnANewConnection() async throws {
        let replies = ["/silent": RawUpstream.Reply("", thenClose: true)]
        try await Self.withRawUpstream(replies) { (env: TestEnvironment, upstream: RawUpstream) async throws in
            let connection = try #require(RawHTTP.Connection(port: env.port, timeout: .seconds(3)))
            connection.send(Self.get("/ok", id: "s1"))
            let ok = Self.echo("/ok", id: "s1")
            #expect(connection.receive(until: ok) == ok)

            // Reused, closed with no byte sent: tried again on a new connection, which (not reused) fails for good.
            connection.send(Self.get("/silent", id: "s2", close: true))
            let body = "{\"error\":\"upstream_unavailable\",\"request_id\":\"s2\"}"
            #expect(connection.receive() == "HTTP/1.1 502 Bad Gateway\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n"
                + "X-Request-Id: s2\r\nConnection: close\r\n\r\n\(body)")
            #expect(upstream.targets == ["/ok", "/silent", "/silent"])
            #expect(upstream.accepted == 2)
        }
    }

    /// POST is not idempotent: the upstream may have acted on it before closing, so no second try.
    @Test func reusedConnectionClosedWithoutAnAnswerIsNotRetriedForAPost() async throws {
        let replies = ["/silent": RawUpstream.Reply("", thenClose: true)]
        try await Self.withRawUpstream(replies) { (env: TestEnvironment, upstream: RawUpstream) async throws in
            let connection = try #require(RawHTTP.Connection(port: env.port, timeout: .seconds(3)))
            connection.send(Self.get("/ok", id: "p1"))
            let ok = Self.echo("/ok", id: "p1")
            #expect(connection.receive(until: ok) == ok)

            connection.send("POST /silent HTTP/1.1\r\nHost: a\r\nX-Request-Id: p2\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            let body = "{\"error\":\"upstream_unavailable\",\"request_id\":\"p2\"}"
            #expect(connection.receive() == "HTTP/1.1 502 Bad Gateway\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n"
                + "X-Request-Id: p2\r\nConnection: close\r\n\r\n\(body)")
            #expect(upstream.targets == ["/ok", "/silent"])
            #expect(upstream.accepted == 1)
        }
    }

    /// The same retry rule through the HTTP/2 door (one `RequestMethods.isIdempotent` for both): two streams
    /// of one connection share its event loop and so its pooled upstream connection; a GET on it that the
    /// upstream closes without a byte is tried once more on a new connection, a POST is not.
    @Test(arguments: [("GET", true), ("POST", false)])
    func overHTTP2TooOnlyAnIdempotentRequestIsRetried(method: String, retried: Bool) async throws {
        let replies = ["/silent": RawUpstream.Reply("", thenClose: true)]
        try await Self.withRawUpstream(replies) { (env: TestEnvironment, upstream: RawUpstream) async throws in
            let answers = try await HTTP2IntakeTests.send([
                .init(name: "ok", headers: HTTP2IntakeTests.block(env, path: "/ok")),
                .init(name: "silent", headers: HTTP2IntakeTests.block(env, method: method, path: "/silent")),
            ], to: env)
            #expect(answers["ok"]?.status == 200, "\(String(describing: answers["ok"]))")
            #expect(answers["silent"]?.status == 502, "\(String(describing: answers["silent"]))")
            #expect(upstream.targets == (retried ? ["/ok", "/silent", "/silent"] : ["/ok", "/silent"]))
            #expect(upstream.accepted == (retried ? 2 : 1))
        }
    }

    // MARK: - One meaning of [upstream] timeout (issue 19)

    /// `[upstream] timeout` (800 ms here) bounds the wait for the response head only: a response whose
    /// bytes keep coming for 1 s arrives whole over both client protocols and both upstream protocols
    /// (over HTTP/1.1 with `protocol = "http1"` it was cut at the timeout); one that stops after its head
    /// is cut after `idle_timeout` (1 s here), never taken for complete.
    @Test(arguments: [UpstreamProtocol.http1, .http2])
    func theTimeoutBoundsTheWaitForTheHeadAndThenTheResponseRunsWhileItsBytesMove(_ upstream: UpstreamProtocol) async throws {
        try await TestEnvironment.run(upstreamHTTP2: upstream == .http2, configure: { configuration, jwks in
            ForwardingTests.publicEverywhere(&configuration, jwks)
            configuration.listen.idleTimeout = .seconds(1)
        }) { (env: TestEnvironment) async throws in
            #expect(env.gatehouse.configuration.upstream.timeout == .milliseconds(800))
            let whole = (0..<5).map { "drip-\($0)," }.joined()
            let overHTTP1 = try await env.request("/drip")
            #expect(overHTTP1.status == 200 && overHTTP1.body == whole, "HTTP/1.1: \(overHTTP1.body)")
            let overHTTP2 = try await HTTP2Tests.curl(["--http2-prior-knowledge", env.baseURL + "/drip"])
            #expect(overHTTP2.status == 200 && overHTTP2.body == whole, "HTTP/2: \(overHTTP2)")

            let started = ContinuousClock.now
            let stalled = RawHTTP.exchange(port: env.port, "GET /stall HTTP/1.1\r\nHost: a\r\n\r\n", timeout: .seconds(5))
            #expect(stalled.hasPrefix("HTTP/1.1 200") && stalled.contains("drip-0,") && !stalled.hasSuffix("0\r\n\r\n"),
                    "cut, not ended: \(stalled.debugDescription)")
            let cutAfter = ContinuousClock.now - started
            #expect(cutAfter >= .milliseconds(900) && cutAfter < .seconds(4), "cut after \(cutAfter), idle_timeout is 1 s")
            let overHTTP2Stream = try await HTTP2IntakeTests.send([.init(name: "stall", headers: HTTP2IntakeTests.block(env, path: "/stall"))], to: env)
            let stream = try #require(overHTTP2Stream["stall"])
            #expect(stream.status == 200 && stream.body == "drip-0," && !stream.ended && stream.resetCode != nil, "reset, not ended: \(stream)")
        }
    }

    /// Bytes the decoder refuses after a request that is being forwarded: that request's answer
    /// comes first (a 400 in its place would be taken for it), then the 400, then the close.
    @Test func malformedPipelinedRequestIsRefusedAfterTheAnswerToTheOneBefore() async throws {
        try await Self.withRawUpstream([:]) { (env: TestEnvironment, upstream: RawUpstream) async throws in
            let connection = try #require(RawHTTP.Connection(port: env.port, timeout: .seconds(3)))
            connection.send(Self.get("/one", id: "r1")
                + "GET /two HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
            #expect(connection.receive() == Self.echo("/one", id: "r1")
                + "HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
            #expect(connection.peerClosed)
            #expect(upstream.targets == ["/one"])
        }
    }

    /// `/.gatehouse/check` judges the method the fronting proxy reports, but its own answer has a
    /// body unless the request on the wire is a HEAD (else the proxy's connection would desync).
    @Test func checkAnswerHasABodyUnlessTheRequestOnTheWireIsHEAD() async throws {
        try await Self.withRawUpstream([:]) { (env: TestEnvironment, upstream: RawUpstream) async throws in
            let allowed = "{\"allowed\":true}"
            let getReportingHEAD = try #require(RawHTTP.Connection(port: env.port, timeout: .seconds(3)))
            getReportingHEAD.send("GET /.gatehouse/check HTTP/1.1\r\nHost: a\r\nX-Request-Id: k1\r\nX-Forwarded-Method: HEAD\r\n"
                + "X-Forwarded-Uri: /x\r\nConnection: close\r\n\r\n")
            let text = getReportingHEAD.receive()
            #expect(text.hasPrefix("HTTP/1.1 200 OK\r\n"))
            #expect(text.contains("\r\nContent-Length: \(allowed.utf8.count)\r\n"))
            #expect(text.hasSuffix("\r\n\r\n" + allowed))

            let headReportingGET = try #require(RawHTTP.Connection(port: env.port, timeout: .seconds(3)))
            headReportingGET.send("HEAD /.gatehouse/check HTTP/1.1\r\nHost: a\r\nX-Request-Id: k2\r\nX-Forwarded-Method: GET\r\n"
                + "X-Forwarded-Uri: /x\r\nConnection: close\r\n\r\n")
            let headText = headReportingGET.receive()
            #expect(headText.hasPrefix("HTTP/1.1 200 OK\r\n"))
            #expect(headText.contains("\r\nContent-Length: \(allowed.utf8.count)\r\n"))
            #expect(headText.hasSuffix("\r\n\r\n"))
            #expect(upstream.targets.isEmpty)
        }
    }

    /// A request asking for an upgrade that is not tunnelled (here `h2c`) stops the decoder, so
    /// the connection is closed after the answer instead of hanging until the idle timeout.
    @Test func anUpgradeRequestThatIsNotTunnelledClosesTheConnectionAfterItsAnswer() async throws {
        try await Self.withRawUpstream([:]) { (env: TestEnvironment, upstream: RawUpstream) async throws in
            let connection = try #require(RawHTTP.Connection(port: env.port, timeout: .seconds(3)))
            connection.send("GET /up HTTP/1.1\r\nHost: a\r\nX-Request-Id: u1\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
                + "HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n")
            #expect(connection.receive() == Self.echo("/up", id: "u1", close: true))
            #expect(connection.peerClosed)
            #expect(upstream.targets == ["/up"])
        }
    }

    /// Two responses in one write, to one request.
    private static let twoResponses = RawUpstream.Reply(
        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfirst" + "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecond")

    @Test func secondResponseToOneRequestNeverReachesTheNextRequest() async throws {
        let replies = ["/double": Self.twoResponses]
        try await Self.withRawUpstream(replies) { (env: TestEnvironment, upstream: RawUpstream) async throws in
            let connection = try #require(RawHTTP.Connection(port: env.port, timeout: .seconds(3)))
            connection.send(Self.get("/double", id: "d1"))
            let first = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Request-Id: d1\r\n\r\nfirst"
            #expect(connection.receive(until: first) == first)

            connection.send(Self.get("/next", id: "d2", close: true))
            #expect(connection.receive() == Self.echo("/next", id: "d2", close: true))
            #expect(upstream.accepted == 2)
            #expect(upstream.targets == ["/double", "/next"])
            #expect(try await Self.eventually { upstream.closed >= 1 })
        }
    }

    /// The next request, pipelined, is taken on the pooled connection while its extra bytes are still
    /// being read: closing that connection must not make Gatehouse send the request a second time.
    @Test func secondResponseToOneRequestWithAPipelinedNextRequestSendsThatRequestOnce() async throws {
        let replies = ["/double": Self.twoResponses]
        try await Self.withRawUpstream(replies) { (env: TestEnvironment, upstream: RawUpstream) async throws in
            let connection = try #require(RawHTTP.Connection(port: env.port, timeout: .seconds(3)))
            connection.send(Self.get("/double", id: "d1") + Self.get("/next", id: "d2", close: true))
            let expected = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Request-Id: d1\r\n\r\nfirst" + Self.echo("/next", id: "d2", close: true)
            #expect(connection.receive() == expected)
            #expect(upstream.targets == ["/double", "/next"])
        }
    }

    // MARK: - Local answers and relayed fields

    @Test func rejectedHEADGets401WithContentLengthButNoBody() async throws {
        try await Self.withRawUpstream([:], publicRoutes: false) { (env: TestEnvironment, upstream: RawUpstream) async throws in
            let connection = try #require(RawHTTP.Connection(port: env.port, timeout: .seconds(3)))
            connection.send("HEAD /v1/orders HTTP/1.1\r\nHost: a\r\nX-Request-Id: f1\r\n\r\n" + Self.get("/v1/orders", id: "f1", close: true))
            let text = connection.receive()
            let headResponse = try #require(Self.splitHead(text))
            #expect(headResponse.head.hasPrefix("HTTP/1.1 401 Unauthorized\r\n"))
            // The GET that follows is answered right after the HEAD's head: nothing came in between.
            let getResponse = try #require(Self.splitHead(String(decoding: headResponse.body, as: UTF8.self)))
            #expect(getResponse.head == String(decoding: headResponse.head.utf8.dropLast(2), as: UTF8.self) + "Connection: close\r\n\r\n")
            let body = String(decoding: getResponse.body, as: UTF8.self)
            #expect(headResponse.head.contains("\r\nContent-Length: \(body.utf8.count)\r\n"))
            #expect(body.hasPrefix("{\"error\":\"invalid_request\",\"reason\":\"missing_token\""))
            #expect(body.hasSuffix("\"request_id\":\"f1\"}"))
            #expect(upstream.targets.isEmpty)
        }
    }

    @Test func upstreamRequestIDAndFieldsItsConnectionHeaderNamesDoNotReachTheClient() async throws {
        let reply = "HTTP/1.1 200 OK\r\nConnection: X-Secret\r\nX-Secret: hidden\r\nX-Request-Id: upstream-id\r\nKeep-Alive: timeout=5\r\n"
            + "X-Visible: yes\r\nContent-Length: 2\r\n\r\nok"
        try await Self.withRawUpstream(["/hygiene": RawUpstream.Reply(reply)]) { (env: TestEnvironment, upstream: RawUpstream) async throws in
            let connection = try #require(RawHTTP.Connection(port: env.port, timeout: .seconds(3)))
            connection.send(Self.get("/hygiene", id: "g1", close: true))
            let expected = "HTTP/1.1 200 OK\r\nX-Visible: yes\r\nContent-Length: 2\r\nX-Request-Id: g1\r\nConnection: close\r\n\r\nok"
            #expect(connection.receive() == expected)

            let response = try await env.request("/hygiene")
            #expect(response.status == 200)
            #expect(response.body == "ok")
            let ids = response.headers["x-request-id"]
            #expect(ids.count == 1)
            #expect(ids.first.map { $0.count == 32 && $0 != "upstream-id" } == true)
            #expect(response.headers.first(name: "x-secret") == nil)
            #expect(response.headers.first(name: "keep-alive") == nil)
        }
    }

    /// RFC 9110 §8.6: a repeated equal length may be accepted only if it is replaced by one value; relayed as
    /// received, it is a response the client's parser must refuse.
    @Test(arguments: ["Content-Length: 2, 2\r\n", "Content-Length: 2\r\nContent-Length: 2\r\n"])
    func repeatedEqualContentLengthReachesTheClientAsOne(lengths: String) async throws {
        try await Self.withRawUpstream(["/lengths": RawUpstream.Reply("HTTP/1.1 200 OK\r\n\(lengths)\r\nok")]) {
            (env: TestEnvironment, upstream: RawUpstream) async throws in
            let connection = try #require(RawHTTP.Connection(port: env.port, timeout: .seconds(3)))
            connection.send(Self.get("/lengths", id: "l1", close: true))
            #expect(connection.receive() == "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Request-Id: l1\r\nConnection: close\r\n\r\nok")

            do {
                let response = try await env.request("/lengths")
                #expect(response.status == 200)
                #expect(response.body == "ok")
            } catch {
                Issue.record("the HTTP client refused the relayed response: \(error)")
            }
        }
    }

    // MARK: - Upstreams that do not speak HTTP/1.x

    /// An SSH server, an HTTP/2-only (gRPC) server behind `protocol = "http1"`, a database: their first
    /// bytes are not `HTTP/1.x `, so the client gets 502 at once, not 504 after `[upstream] timeout`
    /// (30 s by default), and the operational log says why (for HTTP/2, which setting fixes it).
    /// Over both client protocols (the HTTP/2 path uses the same pooled connection and parser).
    @Test(arguments: [
        ("ssh", "SSH-2.0-OpenSSH_9.6p1\r\n", "not an HTTP/1.x response: it begins SSH-2.0-OpenSSH_9"),
        ("h2", "\u{0}\u{0}\u{6}\u{4}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{3}\u{0}\u{0}\u{0}d", "set [upstream] protocol = \"http2\""),
        ("resp", "-ERR unknown command\r\n", "not an HTTP/1.x response"),
        ("version", "HTTP/2.0 200 OK\r\n", "not an HTTP/1.x response"),
    ])
    func anUpstreamThatDoesNotSpeakHTTP1IsAnswered502AtOnce(kind: String, greeting: String, logged: String) async throws {
        try await Self.withRawUpstream(["/\(kind)": RawUpstream.Reply(greeting)], configure: { $0.upstream.timeout = .seconds(20) }) {
            (env: TestEnvironment, upstream: RawUpstream) async throws in
            let started = ContinuousClock.now
            let response = try await env.request("/\(kind)")
            #expect(response.status == 502, "\(kind): \(response)")
            #expect(response.json?["error"] == .string("upstream_unavailable"))
            let curl = try await HTTP2Tests.curl(["--http2-prior-knowledge", env.baseURL + "/\(kind)"])
            #expect(curl.status == 502, "\(kind) over HTTP/2: \(curl)")
            #expect(ContinuousClock.now - started < .seconds(5), "long before the 20 s upstream timeout")
            // Said once for both (at most once per 10 s: a wrong upstream fails every request).
            let lines = env.operationalLog.filter { $0.contains("upstream response refused") }
            #expect(lines.count == 1 && lines.allSatisfy { $0.contains(logged) }, "\(env.operationalLog)")
        }
    }

    // MARK: - Helpers

    /// A Gatehouse in front of a `RawUpstream` answering with `replies` (public routes unless told otherwise).
    private static func withRawUpstream(
        _ replies: [String: RawUpstream.Reply], publicRoutes: Bool = true, configure: @escaping (inout Configuration) -> Void = { _ in },
        _ body: (TestEnvironment, RawUpstream) async throws -> Void
    ) async throws {
        let upstream = try await RawUpstream(replies: replies)
        let outcome: Result<Void, any Error>
        do {
            try await TestEnvironment.run(configure: { configuration, jwks in
                if publicRoutes { ForwardingTests.publicEverywhere(&configuration, jwks) }
                configuration.upstream.url = URL(string: "http://127.0.0.1:\(upstream.port)")!
                configure(&configuration)
            }) { (env: TestEnvironment) async throws in
                try await body(env, upstream)
            }
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        await upstream.close()
        try outcome.get()
    }

    private static func get(_ path: String, id: String, headers: [(String, String)] = [], close: Bool = false) -> String {
        "GET \(path) HTTP/1.1\r\nHost: a\r\nX-Request-Id: \(id)\r\n" + headers.map { "\($0.0): \($0.1)\r\n" }.joined()
            + (close ? "Connection: close\r\n" : "") + "\r\n"
    }

    /// What the client gets of `RawUpstream`'s default answer to `path`.
    private static func echo(_ path: String, id: String, close: Bool = false) -> String {
        "HTTP/1.1 200 OK\r\nContent-Length: \(path.utf8.count)\r\nX-Request-Id: \(id)\r\n" + (close ? "Connection: close\r\n" : "") + "\r\n" + path
    }

    /// Gatehouse's 401 to a request without a token (docs/reference.md §4).
    private static func missingToken(id: String, close: Bool = false) -> String {
        let body = "{\"error\":\"invalid_request\",\"reason\":\"missing_token\",\"message\":\"A bearer token is required.\","
            + "\"request_id\":\"\(id)\"}"
        return "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nCache-Control: no-store\r\n"
            + "WWW-Authenticate: Bearer realm=\"gatehouse\"\r\nContent-Length: \(body.utf8.count)\r\nX-Request-Id: \(id)\r\n"
            + (close ? "Connection: close\r\n" : "") + "\r\n" + body
    }

    /// The head through its empty line, and the bytes after it.
    private static func splitHead(_ text: String) -> (head: String, body: ArraySlice<UInt8>)? {
        let bytes = Array(text.utf8)
        guard let end = headLength(bytes) else { return nil }
        return (String(decoding: bytes[..<end], as: UTF8.self), bytes[end...])
    }

    /// The payload of a chunked body that is well-formed, complete and followed by nothing; nil otherwise.
    private static func dechunk(_ bytes: ArraySlice<UInt8>) -> String? {
        var rest = bytes
        var payload: [UInt8] = []
        while true {
            guard let cr = rest.firstIndex(of: UInt8(ascii: "\r")), cr + 1 < rest.endIndex, rest[cr + 1] == UInt8(ascii: "\n"),
                rest[rest.startIndex..<cr].allSatisfy({ ASCIIByte.hexValue($0) != nil }), cr > rest.startIndex,
                let size = Int(String(decoding: rest[rest.startIndex..<cr], as: UTF8.self), radix: 16)
            else { return nil }
            rest = rest[(cr + 2)...]
            if size == 0 { return rest.elementsEqual("\r\n".utf8) ? String(decoding: payload, as: UTF8.self) : nil }
            guard rest.count >= size + 2, rest.dropFirst(size).prefix(2).elementsEqual("\r\n".utf8) else { return nil }
            payload += rest.prefix(size)
            rest = rest.dropFirst(size + 2)
        }
    }

    /// Polls `condition` until it holds or `timeout` passes: whether it held.
    private static func eventually(timeout: Duration = .seconds(3), _ condition: () -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !condition() {
            if ContinuousClock.now >= deadline { return false }
            try await Task.sleep(for: .milliseconds(10))
        }
        return true
    }
}

/// The length of the head at the start of `bytes`, through its empty line, once all of it is there.
private func headLength(_ bytes: [UInt8]) -> Int? {
    (0..<max(bytes.count - 3, 0)).first { bytes[$0..<$0 + 4].elementsEqual("\r\n\r\n".utf8) }.map { $0 + 4 }
}

/// An upstream that answers each request head with exactly the bytes given for its target (by default
/// a 200 whose body is the target), and counts the connections it accepted and saw closed.
/// Requests are read as heads only: the tests send no request bodies.
private final class RawUpstream: Sendable {
    struct Reply: Sendable {
        var bytes: String
        /// Close the connection once the reply is written (a body delimited by the close).
        var thenClose: Bool

        init(_ bytes: String, thenClose: Bool = false) {
            self.bytes = bytes
            self.thenClose = thenClose
        }
    }

    private struct Counts {
        var accepted = 0
        var closed = 0
        var targets: [String] = []
    }

    private let counts = NIOLockedValueBox(Counts())
    private let channel: any Channel

    init(replies: [String: Reply]) async throws {
        let counts = self.counts
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                counts.withLockedValue { $0.accepted += 1 }
                channel.closeFuture.whenComplete { _ in counts.withLockedValue { $0.closed += 1 } }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Handler(replies: replies, counts: counts))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
    }

    var port: Int { channel.localAddress?.port ?? 0 }
    /// Connections accepted so far.
    var accepted: Int { counts.withLockedValue { $0.accepted } }
    /// Connections closed so far (by either side).
    var closed: Int { counts.withLockedValue { $0.closed } }
    /// The target of every request head received, in order.
    var targets: [String] { counts.withLockedValue { $0.targets } }

    func close() async {
        try? await channel.close()
    }

    private final class Handler: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let replies: [String: Reply]
        let counts: NIOLockedValueBox<Counts>
        private var pending: [UInt8] = []

        init(replies: [String: Reply], counts: NIOLockedValueBox<Counts>) {
            self.replies = replies
            self.counts = counts
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            pending += Array(buffer: unwrapInboundIn(data))
            while let end = headLength(pending) {
                let requestLine = pending.prefix { $0 != UInt8(ascii: "\r") }
                pending.removeFirst(end)
                let target = requestLine.split(separator: UInt8(ascii: " ")).dropFirst().first.map { String(decoding: $0, as: UTF8.self) } ?? ""
                counts.withLockedValue { $0.targets.append(target) }
                let reply = replies[target] ?? Reply("HTTP/1.1 200 OK\r\nContent-Length: \(target.utf8.count)\r\n\r\n\(target)")
                let written = context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: reply.bytes)))
                if reply.thenClose {
                    written.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
                    return
                }
            }
        }
    }
}
