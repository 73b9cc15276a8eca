import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// The client-facing listener: one HTTP/1.1 pipeline per connection, upstream pools per event loop.
struct ProxyServer {
    let services: ServicesHandle
    let upstream: UpstreamConnectionPool.Target
    let maxHeaderBytes: Int
    /// TLS on the client port, when configured; read for each new connection (SIGHUP may replace it).
    let tls: NIOLockedValueBox<NIOSSLContext?>?

    /// Binds and returns the server channel, the quiescing helper that drains it, and the pools to close.
    func bind(host: String, port: Int, group: any EventLoopGroup) async throws -> (any Channel, ConnectionDrainer, [NIOLoopBound<UpstreamConnectionPool>]) {
        let pools = try await Self.makePools(group: group, target: upstream)
        let quiesce = ConnectionDrainer()
        let limits = {
            var limits = NIOHTTPDecoderLimitConfiguration()
            limits.maxHeaderListSize = maxHeaderBytes
            limits.maxHeaderFieldSize = maxHeaderBytes
            return limits
        }()
        let services = self.services
        let tls = self.tls
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(quiesce.makeServerChannelHandler())
                }
            }
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(.autoRead, value: false)
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    guard let pool = pools[ObjectIdentifier(channel.eventLoop)] else {
                        throw ChannelError.ioOnClosedChannel
                    }
                    let sync = channel.pipeline.syncOperations
                    if let context = tls?.withLockedValue({ $0 }) { try sync.addHandler(NIOSSLServerHandler(context: context)) }
                    // The decoder (llhttp) is the only HTTP handler: the connection handler queues
                    // pipelined requests and writes responses as bytes itself.
                    try sync.addHandler(ByteToMessageHandler(
                        HTTPRequestDecoder(leftOverBytesStrategy: .forwardBytes, limitConfiguration: limits)))
                    try sync.addHandler(ClientConnectionHandler(handle: services, pool: pool.value))
                }
            }
            .bind(host: host, port: port)
            .get()
        return (channel, quiesce, Array(pools.values))
    }

    private static func makePools(group: any EventLoopGroup, target: UpstreamConnectionPool.Target) async throws
        -> [ObjectIdentifier: NIOLoopBound<UpstreamConnectionPool>]
    {
        var pools: [ObjectIdentifier: NIOLoopBound<UpstreamConnectionPool>] = [:]
        for eventLoop in group.makeIterator() {
            pools[ObjectIdentifier(eventLoop)] = try await eventLoop.submit {
                NIOLoopBound(UpstreamConnectionPool(eventLoop: eventLoop, target: target), eventLoop: eventLoop)
            }.get()
        }
        return pools
    }
}
