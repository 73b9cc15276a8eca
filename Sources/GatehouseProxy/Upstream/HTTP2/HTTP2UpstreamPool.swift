import NIOCore
import NIOPosix
import NIOSSL
import GatehouseHTTP

/// HTTP/2 connections to the upstream owned by one event loop, shared by every stream forwarded
/// from it: a new stream goes on a connection with room under the upstream's
/// `SETTINGS_MAX_CONCURRENT_STREAMS`; another connection is opened when none has any. A
/// connection the upstream sent GOAWAY on takes no new streams and leaves the pool.
package final class HTTP2UpstreamPool {
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
        if let leg = openStreamNow() { return completion(.success(leg)) }
        waiting.append(completion)
        guard !isConnecting else { return }
        isConnecting = true
        connect().assumeIsolated().whenComplete { result in
            self.isConnecting = false
            let waiting = self.waiting
            self.waiting.removeAll()
            switch result {
            case .success(let bound):
                let connection = bound.value
                connection.pool = self
                self.connections.append(connection)
                // More waiters than the connection takes open the next connection as they go.
                for completion in waiting { self.openStream(completion) }
            case .failure(let error):
                for completion in waiting { completion(.failure(error)) }
            }
        }
    }

    /// A new stream's leg on a connection with room, at once; nil when none has room (or the pool is closed).
    func openStreamNow() -> HTTP2UpstreamLeg? {
        guard !isClosed, let connection = connections.first(where: \.hasRoom) else { return nil }
        return connection.openStream()
    }

    package func connectionClosed(_ connection: HTTP2UpstreamConnection) {
        connections.removeAll { $0 === connection }
    }

    package func closeAll() {
        isClosed = true
        for connection in connections { connection.channel.close(promise: nil) }
        connections.removeAll()
    }

    private func connect() -> EventLoopFuture<NIOLoopBound<HTTP2UpstreamConnection>> {
        let target = self.target
        let isTLS = target.tls != nil
        return ClientBootstrap(group: eventLoop)
            .connectTimeout(target.connectTimeout)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    if let tls = target.tls {
                        try sync.addHandler(NIOSSLClientHandler(context: tls, serverHostname: target.serverName))
                    }
                    // nghttp2 behind one handler: no stream multiplexer (the upstream opens no streams of its own),
                    // Gatehouse builds every request it sends from fields its own readers accepted, and reads the
                    // responses by its own rules (`HTTP2UpstreamLeg.isWellFormed`).
                    try sync.addHandler(HTTP2UpstreamConnection(channel: channel, isTLS: isTLS))
                }
            }
            .connect(host: target.host, port: target.port)
            .flatMapErrorThrowing { error in
                throw UpstreamConnectionPool.ConnectError(description: "connect to \(target.host):\(target.port) failed: \(error)")
            }
            .flatMap { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.handler(type: HTTP2UpstreamConnection.self).activated.futureResult
                }.flatMap { $0 }
            }
    }
}
