package import NIOCore
import NIOHTTP1
import NIOPosix
package import NIOSSL
import GatehouseHTTP
package import GatehouseProxy

/// The `[ext_authz]` listener: HTTP/2 (gRPC, and Envoy's HTTP protocol over an h2 cluster) when a connection
/// opens with the preface or ALPN chose `h2` (`ExtAuthzHTTP2Stream` on an `HTTP2ServerConnection`), HTTP/1.1 otherwise (`ExtAuthzHTTP1Handler`,
/// Envoy's HTTP protocol); both answer through `ExtAuthzResponder`. Its connections drain like the client port's.
package struct ExtAuthzServer {
    package let context: ExtAuthzContext
    package let tls: NIOSSLContext?
    package let idleTimeout: TimeAmount
    package let drainTimeout: TimeAmount

    package init(context: ExtAuthzContext, tls: NIOSSLContext?, idleTimeout: TimeAmount, drainTimeout: TimeAmount) {
        self.context = context
        self.tls = tls
        self.idleTimeout = idleTimeout
        self.drainTimeout = drainTimeout
    }

    package func bind(host: String, port: Int, group: any EventLoopGroup) async throws -> (any Channel, ConnectionDrainer) {
        let quiesce = ConnectionDrainer()
        let context = self.context
        let tls = self.tls
        let idleTimeout = self.idleTimeout
        let drainTimeout = self.drainTimeout
        let metrics = context.handle.services.metrics
        let logger = context.handle.services.logger
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ListenerAcceptBackoff(listener: "ext_authz", metrics: metrics, logger: logger))
                    try channel.pipeline.syncOperations.addHandler(quiesce.makeServerChannelHandler())
                }
            }
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelOption(.autoRead, value: false)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    let configure = { (selected: ProtocolSelector.Selected, channel: any Channel) throws in
                        switch selected {
                        case .http2: try Self.configureHTTP2(channel, context: context, idleTimeout: idleTimeout, drainTimeout: drainTimeout)
                        case .http1: try Self.configureHTTP1(channel, context: context, idleTimeout: idleTimeout)
                        }
                        try channel.syncOptions?.setOption(ChannelOptions.autoRead, value: true)
                    }
                    if let tls {
                        try sync.addHandler(NIOSSLServerHandler(context: tls))
                        try sync.addHandler(ProtocolSelector(.alpn, idleTimeout: idleTimeout, configure: configure))
                    } else {
                        try sync.addHandler(ProtocolSelector(.preface, idleTimeout: idleTimeout, configure: configure))
                    }
                }
            }
            .bind(host: host, port: port)
            .get()
        return (channel, quiesce)
    }

    private static func configureHTTP1(_ channel: any Channel, context: ExtAuthzContext, idleTimeout: TimeAmount) throws {
        let sync = channel.pipeline.syncOperations
        // A connection that sends nothing for `idle_timeout` (between requests, or in the middle of one) is closed.
        try sync.addHandler(IdleStateHandler(readTimeout: idleTimeout))
        try sync.addHandler(IdleConnectionCloser())
        try sync.configureHTTPServerPipeline(withErrorHandling: true)
        try sync.addHandler(ExtAuthzHTTP1Handler(context: context))
    }

    /// As on the client port (`HTTP2ServerSetup`): one `HTTP2ServerConnection` (nghttp2 with NIO's flood rules, idle and
    /// graceful-stop GOAWAYs), whose streams are Checks (`ExtAuthzHTTP2Stream`).
    private static func configureHTTP2(_ channel: any Channel, context: ExtAuthzContext, idleTimeout: TimeAmount, drainTimeout: TimeAmount) throws {
        let settings = HTTP2ServerConnection.Settings(
            idleTimeout: idleTimeout, drainTimeout: drainTimeout, maxHeaderBytes: context.maxHeaderBytes,
            maxConcurrentStreams: HTTP2ServerSetup.maxConcurrentStreams,
            headerListCeiling: HTTP2ServerSetup.headerListCeiling(maxHeaderBytes: context.maxHeaderBytes))
        try channel.pipeline.syncOperations.addHandler(HTTP2ServerConnection(eventLoop: channel.eventLoop, settings: settings) { channel in
            let shared = ExtAuthzHTTP2Stream.Shared(
                responder: ExtAuthzResponder(context: context), peerIP: channel.remoteAddress?.ipAddress ?? "", idleTimeout: idleTimeout,
                allocator: channel.allocator)
            return { connection, id in ExtAuthzHTTP2Stream(id: id, connection: connection, shared: shared) }
        })
        try channel.syncOptions?.setOption(ChannelOptions.autoRead, value: true)
    }
}
