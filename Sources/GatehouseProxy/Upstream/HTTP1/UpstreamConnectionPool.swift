package import NIOCore
import NIOPosix
package import NIOSSL

/// Keep-alive connections to the upstream owned by one event loop, used only from it: a request
/// is forwarded on its client connection's loop with no cross-thread hop.
package final class UpstreamConnectionPool {
    package struct Target: Sendable {
        package var host: String
        package var port: Int
        package var connectTimeout: TimeAmount
        /// Set for an https:// upstream.
        package var tls: NIOSSLContext?

        package init(host: String, port: Int, connectTimeout: TimeAmount, tls: NIOSSLContext?) {
            self.host = host
            self.port = port
            self.connectTimeout = connectTimeout
            self.tls = tls
        }
        /// Idle connections kept per event loop.
        var maxIdle = 64

        /// SNI name: the host unless it is an IP literal (SNI carries names only).
        var serverName: String? {
            (try? SocketAddress(ipAddress: host, port: 0)) == nil ? host : nil
        }
    }

    struct ConnectError: Error, CustomStringConvertible {
        var description: String
    }

    package let eventLoop: any EventLoop
    private let target: Target
    private var idle: [UpstreamConnection] = []
    private var isClosed = false

    package init(eventLoop: any EventLoop, target: Target) {
        self.eventLoop = eventLoop
        self.target = target
    }

    /// An idle connection that is still open, taken out of the pool (no future: the common case
    /// costs no allocation or callback).
    func takeIdle() -> UpstreamConnection? {
        while let connection = idle.popLast() {
            connection.idleIn = nil
            if connection.channel.isActive {
                connection.isReused = true
                return connection
            }
        }
        return nil
    }

    /// Back to the pool if still open and there is room; closed otherwise.
    func release(_ connection: UpstreamConnection) {
        connection.delegate = nil
        guard !isClosed, connection.isReusable, connection.channel.isActive, idle.count < target.maxIdle else {
            connection.channel.close(promise: nil)
            return
        }
        connection.idleIn = self
        idle.append(connection)
        // Keep a read pending so an upstream close of an idle connection is noticed at once.
        connection.read()
    }

    /// The upstream closed a connection idling here.
    func idleConnectionClosed(_ connection: UpstreamConnection) {
        idle.removeAll { $0 === connection }
    }

    func discard(_ connection: UpstreamConnection) {
        connection.delegate = nil
        connection.channel.close(promise: nil)
    }

    package func closeAll() {
        isClosed = true
        let connections = idle
        idle.removeAll()
        for connection in connections { connection.channel.close(promise: nil) }
    }

    /// A new connection (when `takeIdle` has none).
    package func connect() -> EventLoopFuture<UpstreamConnection> {
        let target = self.target
        return ClientBootstrap(group: eventLoop)
            .connectTimeout(target.connectTimeout)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelOption(.autoRead, value: false)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    if let tls = target.tls {
                        try sync.addHandler(NIOSSLClientHandler(context: tls, serverHostname: target.serverName))
                    }
                    try sync.addHandler(UpstreamConnection(channel: channel))
                }
            }
            .connect(host: target.host, port: target.port)
            .flatMapErrorThrowing { error in
                throw ConnectError(description: "connect to \(target.host):\(target.port) failed: \(error)")
            }
            .flatMapThrowing { channel in
                try channel.pipeline.syncOperations.handler(type: UpstreamConnection.self)
            }
    }
}
