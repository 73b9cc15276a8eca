import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL

/// HTTP/2 connections to the upstream owned by one event loop, shared by every stream forwarded
/// from it: a new stream goes on a connection with room under the upstream's
/// `SETTINGS_MAX_CONCURRENT_STREAMS`; another connection is opened when none has any. A
/// connection the upstream sent GOAWAY on takes no new streams and leaves the pool.
final class HTTP2UpstreamPool {
    typealias Completion = (Result<HTTP2UpstreamLeg, any Error>) -> Void

    private let eventLoop: any EventLoop
    private let target: UpstreamConnectionPool.Target
    private var connections: [HTTP2UpstreamConnection] = []
    /// Streams asked for while a connection is being set up wait for it rather than open more.
    private var waiting: [Completion] = []
    private var isConnecting = false
    private var isClosed = false

    init(eventLoop: any EventLoop, target: UpstreamConnectionPool.Target) {
        self.eventLoop = eventLoop
        self.target = target
    }

    /// A new stream with its leg handler in place; called back on this loop. Everything here is
    /// confined to the loop, so completions are plain closures rather than futures.
    func openStream(_ completion: @escaping Completion) {
        if isClosed { return completion(.failure(ChannelError.ioOnClosedChannel)) }
        if let connection = connections.first(where: \.hasRoom) { return connection.openStream(completion) }
        waiting.append(completion)
        guard !isConnecting else { return }
        isConnecting = true
        connect().assumeIsolated().whenComplete { result in
            self.isConnecting = false
            let waiting = self.waiting
            self.waiting.removeAll()
            switch result {
            case .success(let connection):
                connection.pool = self
                self.connections.append(connection)
                // More waiters than the connection takes open the next connection as they go.
                for completion in waiting { self.openStream(completion) }
            case .failure(let error):
                for completion in waiting { completion(.failure(error)) }
            }
        }
    }

    func connectionClosed(_ connection: HTTP2UpstreamConnection) {
        connections.removeAll { $0 === connection }
    }

    func closeAll() {
        isClosed = true
        for connection in connections { connection.channel.close(promise: nil) }
        connections.removeAll()
    }

    private func connect() -> EventLoopFuture<HTTP2UpstreamConnection> {
        let target = self.target
        let isTLS = target.tls != nil
        return ClientBootstrap(group: eventLoop)
            .connectTimeout(target.connectTimeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    if let tls = target.tls {
                        try sync.addHandler(NIOSSLClientHandler(context: tls, serverHostname: target.serverName))
                    }
                    let multiplexer = try sync.configureHTTP2Pipeline(
                        mode: .client, connectionConfiguration: .init(), streamConfiguration: .init()
                    ) { channel in
                        channel.eventLoop.makeSucceededVoidFuture()  // the upstream opens no streams of its own
                    }
                    try sync.addHandler(HTTP2UpstreamConnection(channel: channel, multiplexer: multiplexer, isTLS: isTLS))
                }
            }
            .connect(host: target.host, port: target.port)
            .flatMapErrorThrowing { error in
                throw UpstreamConnectionPool.ConnectError(description: "connect to \(target.host):\(target.port) failed: \(error)")
            }
            .flatMapThrowing { channel in
                try channel.pipeline.syncOperations.handler(type: HTTP2UpstreamConnection.self)
            }
    }
}

/// One multiplexed HTTP/2 connection to the upstream: watches the upstream's SETTINGS and GOAWAY
/// and counts the streams open on it.
final class HTTP2UpstreamConnection: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame

    let channel: any Channel
    private let multiplexer: NIOHTTP2Handler.StreamMultiplexer
    private let isTLS: Bool
    weak var pool: HTTP2UpstreamPool?
    /// Until the upstream's first SETTINGS says otherwise (RFC 9113 §6.5.2: unlimited; 100 is
    /// what most servers announce).
    private var maxConcurrentStreams = 100
    private var openStreams = 0
    private var isGoingAway = false

    init(channel: any Channel, multiplexer: NIOHTTP2Handler.StreamMultiplexer, isTLS: Bool) {
        self.channel = channel
        self.multiplexer = multiplexer
        self.isTLS = isTLS
    }

    var hasRoom: Bool { channel.isActive && !isGoingAway && openStreams < maxConcurrentStreams }

    func openStream(_ completion: @escaping HTTP2UpstreamPool.Completion) {
        openStreams += 1
        let promise = channel.eventLoop.makePromise(of: (any Channel).self)
        let scheme: HTTP2FramePayloadToHTTP1ClientCodec.HTTPProtocol = isTLS ? .https : .http
        multiplexer.createStreamChannel(promise: promise) { streamChannel in
            streamChannel.eventLoop.makeCompletedFuture {
                try streamChannel.syncOptions?.setOption(ChannelOptions.autoRead, value: false)
                let sync = streamChannel.pipeline.syncOperations
                try sync.addHandler(HTTP2FramePayloadToHTTP1ClientCodec(httpProtocol: scheme))
                try sync.addHandler(HTTP2UpstreamLeg(channel: streamChannel))
            }
        }
        promise.futureResult.assumeIsolated().whenComplete { result in
            switch result {
            case .success(let streamChannel):
                streamChannel.closeFuture.assumeIsolated().whenComplete { _ in
                    self.openStreams -= 1
                    if self.isGoingAway && self.openStreams == 0 { self.channel.close(promise: nil) }
                }
                completion(Result { try streamChannel.pipeline.syncOperations.handler(type: HTTP2UpstreamLeg.self) })
            case .failure(let error):
                self.openStreams -= 1
                completion(.failure(error))
            }
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .settings(.settings(let settings)):
            for setting in settings where setting.parameter == .maxConcurrentStreams {
                maxConcurrentStreams = setting.value
            }
        case .goAway:
            // Streams the upstream never processed are refused (and retried by their handlers);
            // new ones go to another connection.
            isGoingAway = true
            pool?.connectionClosed(self)
        default:
            break
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        pool?.connectionClosed(self)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
