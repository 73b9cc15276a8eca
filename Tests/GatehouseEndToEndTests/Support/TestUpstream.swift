import Foundation
@testable import Gatehouse
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import GatehouseSyntax
import GatehouseProxy
import GatehouseExtAuthz

/// The unmodified upstream of the tests: records every request it receives and answers by path.
///
/// - `/redirect`: 302 to the cloud metadata address (never to be followed).
/// - `/slow`: answers after 2 s.
/// - `/drip`: the head at once, then a part every 200 ms for 1 s (`drip-0,` … `drip-4,`), then the end.
/// - `/stall`: the head and one part at once, then nothing (the connection stays open).
/// - `/ws`: WebSocket-style 101, then echoes raw bytes.
/// - `/early`: 413 at once, without reading the body.
/// - `/chunked`: a chunked response in three parts.
/// - `Expect: 100-continue` on any path: a `100 Continue` first.
/// - anything else: 200 with JSON describing the request (`x-test-new-session: ID` adds `Mcp-Session-Id: ID`,
///   `x-test-status: N` answers N).
final class TestUpstream: Sendable {
    struct Received: Sendable {
        var method: String
        var uri: String
        var headers: [(String, String)]
        var bodyBytes: Int
        /// The request's trailer section, as received.
        var trailers: [(String, String)] = []
        /// The body's first `TestUpstream.keptBodyBytes` bytes, as received.
        var body: [UInt8] = []

        func values(_ name: String) -> [String] {
            headers.filter { $0.0.lowercased() == name.lowercased() }.map(\.1)
        }
        func value(_ name: String) -> String? { values(name).first }
    }

    /// Everything that reached this upstream, down to the byte: "nothing reached the upstream"
    /// (docs/security.md §1) means no connection and no byte, not only no finished request.
    struct Traffic: Equatable, Sendable, CustomStringConvertible {
        var connections = 0
        var bytes = 0
        /// Request heads parsed, finished or not.
        var heads = 0
        /// Requests whose head arrived and whose end has not, on connections (or streams) still open.
        var unfinishedOpen = 0
        var description: String { "\(connections) connections, \(bytes) bytes, \(heads) request heads, \(unfinishedOpen) unfinished and open" }
    }

    /// How much of each request body is kept for a test to compare (`Received.body`).
    static let keptBodyBytes = 1 << 20

    private let received = NIOLockedValueBox<[Received]>([])
    private let counted = NIOLockedValueBox(Traffic())
    private let closed = NIOLockedValueBox(0)
    /// The connections open now, closed with the listener (an upstream that stops drops them all).
    private let open = NIOLockedValueBox<[ObjectIdentifier: any Channel]>([:])
    private let channel: any Channel
    /// The listener of `settledTraffic()`'s marker connections, on the same event loop as `channel`.
    private let markerChannel: any Channel

    /// One thread serves every test upstream, its listeners and its connections: a marker connection is then
    /// read on the loop that reads everything else (see `settledTraffic()`).
    private static let loop = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    /// - Parameters:
    ///   - tls: serve https with this context.
    ///   - http2: speak HTTP/2 (prior knowledge, or ALPN `h2` with `tls`), each stream one request.
    ///   - port: the port to listen on (0: any free one); a restarted upstream binds its predecessor's.
    init(tls: NIOSSLContext? = nil, http2: Bool = false, port: Int = 0) async throws {
        let received = self.received
        let counted = self.counted
        let closed = self.closed
        let open = self.open
        channel = try await ServerBootstrap(group: Self.loop)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                counted.withLockedValue { $0.connections += 1 }
                open.withLockedValue { $0[ObjectIdentifier(channel)] = channel }
                channel.closeFuture.whenComplete { _ in
                    closed.withLockedValue { $0 += 1 }
                    open.withLockedValue { $0[ObjectIdentifier(channel)] = nil }
                }
                return channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(ByteCounter(counted: counted))
                    if let tls { try sync.addHandler(NIOSSLServerHandler(context: tls)) }
                    if http2 {
                        _ = try sync.configureHTTP2Pipeline(
                            mode: .server, connectionConfiguration: .init(), streamConfiguration: .init()
                        ) { stream in
                            stream.eventLoop.makeCompletedFuture {
                                try stream.pipeline.syncOperations.addHandler(HTTP2FramePayloadToHTTP1ServerCodec())
                                try stream.pipeline.syncOperations.addHandler(Handler(received: received, counted: counted))
                            }
                        }
                        return
                    }
                    try sync.configureHTTPServerPipeline(
                        withPipeliningAssistance: false, withServerUpgrade: nil, withErrorHandling: false, withOutboundHeaderValidation: false)
                    try sync.addHandler(Handler(received: received, counted: counted))
                }
            }
            .bind(host: "127.0.0.1", port: port).get()
        markerChannel = try await ServerBootstrap(group: Self.loop)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(SettleMarker()) }
            }
            .bind(host: "127.0.0.1", port: 0).get()
    }

    var port: Int { channel.localAddress?.port ?? 0 }
    var requests: [Received] { received.withLockedValue { $0 } }
    var requestCount: Int { received.withLockedValue { $0.count } }
    /// Connections to this upstream that have closed so far.
    var closedConnections: Int { closed.withLockedValue { $0 } }
    var last: Received? { received.withLockedValue { $0.last } }
    var traffic: Traffic { counted.withLockedValue { $0 } }

    /// What has reached this upstream, counted once everything sent to it before this call has been read: the
    /// positive marker that "nothing reached the upstream" (docs/security.md §1) is judged by, in place of a wait.
    ///
    /// A marker connection goes to a second listener on the upstream's one event loop, which answers it only after
    /// two more turns of that loop. A connection made or a byte written to this upstream before the marker was sent
    /// (bytes a proxy wrote before answering its client are in the upstream's socket before the client reads the
    /// answer) was ready when the marker was, so it is accepted and read in the marker's turn of the loop or
    /// before it, and counted before the marker is answered.
    func settledTraffic() throws -> Traffic {
        let port = markerChannel.localAddress?.port ?? 0
        let answer = RawHTTP.exchange(port: port, "marker", timeout: .seconds(10))
        guard answer == SettleMarker.answer else { throw SettleError.markerUnanswered(port: port, answer: answer) }
        return traffic
    }

    enum SettleError: Error { case markerUnanswered(port: Int, answer: String) }

    /// Forgets what was received and counted so far.
    func reset() {
        received.withLockedValue { $0.removeAll() }
        counted.withLockedValue { $0 = Traffic() }
    }

    /// Stops listening and drops every open connection, as a stopped process would.
    func close() async {
        try? await channel.close()
        try? await markerChannel.close()
        for connection in open.withLockedValue({ Array($0.values) }) { try? await connection.close() }
    }

    /// First in every connection's pipeline: counts the bytes as they arrive, before any parsing.
    private final class ByteCounter: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = ByteBuffer
        typealias InboundOut = ByteBuffer
        let counted: NIOLockedValueBox<Traffic>

        init(counted: NIOLockedValueBox<Traffic>) { self.counted = counted }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let bytes = unwrapInboundIn(data).readableBytes
            counted.withLockedValue { $0.bytes += bytes }
            context.fireChannelRead(data)
        }
    }

    private final class Handler: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        let received: NIOLockedValueBox<[Received]>
        let counted: NIOLockedValueBox<Traffic>
        var head: HTTPRequestHead?
        var bodyBytes = 0
        var body: [UInt8] = []
        var answeredEarly = false

        init(received: NIOLockedValueBox<[Received]>, counted: NIOLockedValueBox<Traffic>) {
            self.received = received
            self.counted = counted
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                counted.withLockedValue {
                    $0.heads += 1
                    $0.unfinishedOpen += 1
                }
                self.head = head
                bodyBytes = 0
                body = []
                answeredEarly = false
                if head.headers.first(name: "expect")?.lowercased() == "100-continue" {
                    let informational = HTTPResponseHead(version: .http1_1, status: .continue)
                    context.writeAndFlush(wrapOutboundOut(.head(informational)), promise: nil)
                }
                if head.uri.hasPrefix("/early") {
                    answeredEarly = true
                    respond(context, status: .payloadTooLarge, body: "too large", keepAlive: false)
                }
            case .body(let buffer):
                bodyBytes += buffer.readableBytes
                if body.count < TestUpstream.keptBodyBytes { body += buffer.readableBytesView.prefix(TestUpstream.keptBodyBytes - body.count) }
            case .end(let trailers):
                guard let head else { return }
                self.head = nil
                counted.withLockedValue { $0.unfinishedOpen -= 1 }
                received.withLockedValue {
                    $0.append(Received(
                        method: head.method.rawValue, uri: head.uri, headers: head.headers.map { ($0.name, $0.value) }, bodyBytes: bodyBytes,
                        trailers: trailers?.map { ($0.name, $0.value) } ?? [], body: body))
                }
                if answeredEarly { return }
                answer(head, context: context)
            }
        }

        func channelInactive(context: ChannelHandlerContext) {
            if head != nil { counted.withLockedValue { $0.unfinishedOpen -= 1 } }
            head = nil
            context.fireChannelInactive()
        }

        private func answer(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
            switch head.uri {
            case let uri where uri.hasPrefix("/hop-by-hop"):
                // Fields no client may get from a proxy (over HTTP/2, NIO's codec drops Connection and what it names), and
                // a request id of the upstream's own, which Gatehouse's replaces.
                respond(context, status: .ok, body: "hop", extraHeaders: [
                    ("Trailer", "x-checksum"), ("Proxy-Agent", "upstream"), ("Connection", "x-drop"), ("X-Drop", "1"), ("X-Kept", "yes"),
                    ("X-Request-Id", "upstream-id"),
                ], keepAlive: head.isKeepAlive)
            case let uri where uri.hasPrefix("/large/"):
                // `/large/N`: N KiB of "0123456789abcdef" repeated, in one write (the proxy's watermarks do the pacing).
                let kibibytes = Int(uri.dropFirst("/large/".count)) ?? 1
                respond(context, status: .ok, body: String(repeating: "0123456789abcdef", count: kibibytes * 64), keepAlive: head.isKeepAlive)
            case let uri where uri.hasPrefix("/redirect"):
                respond(context, status: .found, body: "", extraHeaders: [("Location", "http://169.254.169.254/latest/meta-data/")], keepAlive: head.isKeepAlive)
            case let uri where uri.hasPrefix("/slow"):
                let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
                context.eventLoop.assumeIsolated().scheduleTask(in: .seconds(2)) {
                    self.respond(loopBound.value, status: .ok, body: "slow", keepAlive: head.isKeepAlive)
                }
            case let uri where uri.hasPrefix("/drip") || uri.hasPrefix("/stall"):
                let response = HTTPResponseHead(version: .http1_1, status: .ok, headers: ["Content-Type": "text/plain", "X-Upstream": "test"])
                context.write(wrapOutboundOut(.head(response)), promise: nil)
                context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: "drip-0,")))), promise: nil)
                guard uri.hasPrefix("/drip") else { return }
                let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
                for index in 1...5 {
                    context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(200 * Int64(index))) {
                        let context = loopBound.value
                        if index < 5 {
                            context.writeAndFlush(self.wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: "drip-\(index),")))), promise: nil)
                        } else {
                            context.writeAndFlush(self.wrapOutboundOut(.end(nil)), promise: nil)
                        }
                    }
                }
            case let uri where uri.hasPrefix("/ws"):
                startEcho(context)
            case let uri where uri.hasPrefix("/chunked"):
                let response = HTTPResponseHead(version: .http1_1, status: .ok, headers: ["Content-Type": "text/plain"])
                context.write(wrapOutboundOut(.head(response)), promise: nil)
                for part in ["one,", "two,", "three"] {
                    var buffer = context.channel.allocator.buffer(capacity: 8)
                    buffer.writeString(part)
                    context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
                }
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            case let uri where uri.hasPrefix("/whoami"):
                // Who Gatehouse said the caller is: every X-Auth-Subject value received, in order.
                let subjects = head.headers[canonicalForm: "x-auth-subject"].joined(separator: ",")
                respond(context, status: .ok, body: subjects, keepAlive: head.isKeepAlive)
            default:
                let echo = JSONValue.object([
                    "method": .string(head.method.rawValue), "uri": .string(head.uri), "body_bytes": .number(String(bodyBytes)),
                ]).compactJSON
                // An MCP server's session: `x-test-new-session: ID` makes the answer carry `Mcp-Session-Id: ID`;
                // `x-test-status: N` answers N.
                let session = head.headers.first(name: "x-test-new-session").map { [("Mcp-Session-Id", $0)] } ?? []
                let status = head.headers.first(name: "x-test-status").flatMap(Int.init).map { HTTPResponseStatus(statusCode: $0) } ?? .ok
                respond(context, status: status, body: echo, extraHeaders: session, keepAlive: head.isKeepAlive)
            }
        }

        private func respond(
            _ context: ChannelHandlerContext, status: HTTPResponseStatus, body: String, extraHeaders: [(String, String)] = [],
            keepAlive: Bool
        ) {
            var buffer = context.channel.allocator.buffer(capacity: body.utf8.count)
            buffer.writeString(body)
            var headers = HTTPHeaders([("Content-Length", String(buffer.readableBytes)), ("X-Upstream", "test")] + extraHeaders)
            if !keepAlive { headers.add(name: "Connection", value: "close") }
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
                if !keepAlive { context.close(promise: nil) }
            }
        }

        /// 101, then every byte received is sent back.
        private func startEcho(_ context: ChannelHandlerContext) {
            let headers: HTTPHeaders = ["Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Accept": "test"]
            context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .switchingProtocols, headers: headers))))
                .assumeIsolated().whenComplete { _ in
                    let sync = context.pipeline.syncOperations
                    try? sync.addHandler(ByteEchoHandler())
                    if let encoder = try? sync.handler(type: HTTPResponseEncoder.self) { _ = sync.removeHandler(encoder) }
                    if let decoder = try? sync.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self) { _ = sync.removeHandler(decoder) }
                    _ = sync.removeHandler(self)
                }
        }
    }

    /// Answers a marker connection's first bytes after two turns of the event loop, then closes it.
    private final class SettleMarker: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        static let answer = "settled"
        var answered = false

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard !answered else { return }
            answered = true
            let loop = context.eventLoop.assumeIsolated()
            loop.execute {
                loop.execute {
                    context.writeAndFlush(self.wrapOutboundOut(ByteBuffer(string: Self.answer))).assumeIsolated().whenComplete { _ in
                        context.close(promise: nil)
                    }
                }
            }
        }
    }

    private final class ByteEchoHandler: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            context.writeAndFlush(data, promise: nil)
        }
    }
}
