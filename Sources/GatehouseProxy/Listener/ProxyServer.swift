package import NIOConcurrencyHelpers
package import NIOCore
import NIOHTTP1
import NIOPosix
package import NIOSSL
package import GatehouseConfig
import GatehouseExchange

/// The client-facing listener. A cleartext connection is HTTP/2 when it opens with the HTTP/2
/// preface, a TLS one when ALPN chose `h2`; any other is HTTP/1.1 (one `ClientConnectionHandler`). Both doors
/// drive every request through a `StreamDriver` over upstream legs (`UpstreamLegFactory`); upstream pools are
/// per event loop.
package struct ProxyServer {
    package let services: ServicesHandle
    package let upstream: UpstreamConnectionPool.Target
    package let upstreamProtocol: UpstreamProtocol
    package let maxHeaderBytes: Int
    /// `[listen] http2`: offer HTTP/2 at all.
    package let http2: Bool
    package let idleTimeout: TimeAmount
    package let drainTimeout: TimeAmount
    /// TLS on the client port, when configured; read for each new connection (SIGHUP may replace it).
    package let tls: NIOLockedValueBox<NIOSSLContext?>?

    package init(
        services: ServicesHandle, upstream: UpstreamConnectionPool.Target, upstreamProtocol: UpstreamProtocol,
        maxHeaderBytes: Int, http2: Bool, idleTimeout: TimeAmount, drainTimeout: TimeAmount,
        tls: NIOLockedValueBox<NIOSSLContext?>?
    ) {
        self.services = services
        self.upstream = upstream
        self.upstreamProtocol = upstreamProtocol
        self.maxHeaderBytes = maxHeaderBytes
        self.http2 = http2
        self.idleTimeout = idleTimeout
        self.drainTimeout = drainTimeout
        self.tls = tls
    }

    /// The upstream pools of every event loop, closed at stop.
    package struct Pools: Sendable {
        package var http1: [ObjectIdentifier: NIOLoopBound<UpstreamConnectionPool>]
        package var http2: [ObjectIdentifier: NIOLoopBound<HTTP2UpstreamPool>]

        package func closeAll() async {
            for pool in http1.values { try? await pool.eventLoop.submit { pool.value.closeAll() }.get() }
            for pool in http2.values { try? await pool.eventLoop.submit { pool.value.closeAll() }.get() }
        }
    }

    /// Binds and returns the server channel, the quiescing helper that drains it, and the pools to close.
    package func bind(host: String, port: Int, group: any EventLoopGroup) async throws -> (any Channel, ConnectionDrainer, Pools) {
        let pools = try await Self.makePools(group: group, target: upstream, protocolVersion: upstreamProtocol)
        let legs = UpstreamLegFactory(protocolVersion: upstreamProtocol, http1Pools: pools.http1, http2Pools: pools.http2)
        let quiesce = ConnectionDrainer()
        let services = self.services
        let tls = self.tls
        let http2 = self.http2 ? HTTP2ServerSetup(
            handle: services, upstream: legs, maxHeaderBytes: maxHeaderBytes, idleTimeout: idleTimeout, drainTimeout: drainTimeout) : nil
        let idleTimeout = self.idleTimeout
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        ListenerAcceptBackoff(listener: "client", metrics: services.services.metrics, logger: services.services.logger))
                    try channel.pipeline.syncOperations.addHandler(quiesce.makeServerChannelHandler())
                }
            }
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelOption(.autoRead, value: false)
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            // A connection keeps its receive buffer between reads: 1 KiB to start (a request head with a JWT fits),
            // growing with full reads, rather than NIO's 2 KiB: an idle HTTP/2 connection holds 31 KiB, not 34.
            .childChannelOption(.recvAllocator, value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 1024, maximum: 65536))
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    let http1 = { (channel: any Channel) throws in
                        // One handler: it parses the bytes (HTTP1RequestParser), queues pipelined requests, drives
                        // each through a StreamDriver (as an HTTP/2 stream's) and writes the answers as bytes itself.
                        let connection = StreamDriver.Connection(
                            handle: services, upstream: legs, peer: ClientPeer(channel: channel), tokenMemory: ConnectionTokenMemory())
                        try channel.pipeline.syncOperations.addHandler(
                            ClientConnectionHandler(connection: connection, eventLoop: channel.eventLoop, maxHeaderBytes: maxHeaderBytes))
                    }
                    if let context = tls?.withLockedValue({ $0 }) {
                        try sync.addHandler(NIOSSLServerHandler(context: context))
                        guard let http2 else { return try http1(channel) }
                        try sync.addHandler(ProtocolSelector(.alpn, idleTimeout: idleTimeout) { chosen, channel in
                            try chosen == .http2 ? http2.configure(channel) : http1(channel)
                        })
                    } else if let http2 {
                        try sync.addHandler(ProtocolSelector(.preface, idleTimeout: idleTimeout) { detected, channel in
                            try detected == .http2 ? http2.configure(channel) : http1(channel)
                        })
                    } else {
                        try http1(channel)
                    }
                }
            }
            .bind(host: host, port: port)
            .get()
        return (channel, quiesce, pools)
    }

    private static func makePools(group: any EventLoopGroup, target: UpstreamConnectionPool.Target, protocolVersion: UpstreamProtocol)
        async throws -> Pools
    {
        var pools = Pools(http1: [:], http2: [:])
        for eventLoop in group.makeIterator() {
            pools.http1[ObjectIdentifier(eventLoop)] = try await eventLoop.submit {
                NIOLoopBound(UpstreamConnectionPool(eventLoop: eventLoop, target: target), eventLoop: eventLoop)
            }.get()
            if protocolVersion == .http2 {
                pools.http2[ObjectIdentifier(eventLoop)] = try await eventLoop.submit {
                    NIOLoopBound(HTTP2UpstreamPool(eventLoop: eventLoop, target: target), eventLoop: eventLoop)
                }.get()
            }
        }
        return pools
    }
}
