package import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
package import NIOSSL
import GatehouseHTTP
package import GatehouseProxy

/// The `[ext_authz]` listener: HTTP/2 (gRPC, and Envoy's HTTP protocol over an h2 cluster) when a connection
/// opens with the preface or ALPN chose `h2` (`ExtAuthzHTTP2Handler`), HTTP/1.1 otherwise (`ExtAuthzHTTP1Handler`,
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

    /// Frame by frame, as on the client port (`HTTP2ServerSetup`): NIO's codec and flood defences, the guard that
    /// closes what NIO gives up on, Gatehouse's stream table, and the manager for idle connections and graceful stops.
    private static func configureHTTP2(_ channel: any Channel, context: ExtAuthzContext, idleTimeout: TimeAmount, drainTimeout: TimeAmount) throws {
        let sync = channel.pipeline.syncOperations
        let manager = HTTP2ServerSetup.connectionManager(channel, idleTimeout: idleTimeout, drainTimeout: drainTimeout)
        let connectionGuard = HTTP2ConnectionGuard(drainTimeout: drainTimeout)
        var stream = NIOHTTP2Handler.StreamConfiguration()
        stream.targetWindowSize = HTTP2ServerSetup.targetWindow
        try sync.addHandler(connectionGuard)
        try sync.addHandler(HTTP2WriteCoalescer())
        var connection = HTTP2ServerSetup.connectionConfiguration(maxHeaderBytes: context.maxHeaderBytes)
        // Every request block is read by the client port's reader (`ExtAuthzHTTP2Handler.respond`), as there: NIO would
        // judge it a second time, and its own answers' too.
        connection.headerBlockValidation = .disabled
        try sync.addHandler(NIOHTTP2Handler(mode: .server, connectionConfiguration: connection, streamConfiguration: stream))
        try sync.addHandler(ExtAuthzHTTP2Handler(
            context: context, eventLoop: channel.eventLoop, idleTimeout: idleTimeout, connectionGuard: connectionGuard,
            manager: manager.http2StreamDelegate))
        try sync.addHandler(manager)
        // As on the client port: NIO's handler swallows the channelActive the protocol selector fires next.
        try sync.context(handlerType: NIOHTTP2Handler.self).fireChannelActive()
    }
}
