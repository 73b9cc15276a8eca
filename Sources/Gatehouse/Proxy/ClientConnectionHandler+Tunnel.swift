import Logging
import NIOCore
import NIOHTTP1

/// WebSocket: authenticated like any request; tunnelled only after the upstream's own 101.
extension ClientConnectionHandler {
    /// Passes the upstream's 101 to the client; the tunnel starts when that response ends.
    func acceptUpgrade(_ exchange: Exchange, response: HTTPResponseHead, context: ChannelHandlerContext) {
        exchange.responseDeadline = nil
        state = .upgrading(exchange)
        var headers = response.headers
        HeaderHygiene.removeHopByHop(&headers, keepWebSocketUpgrade: true)
        headers.replaceOrAdd(name: "X-Request-Id", value: exchange.requestID)
        let head = HTTPResponseHead(version: exchange.head.version, status: .switchingProtocols, headers: headers)
        context.writeAndFlush(wrapOutboundOut(.head(head)), promise: nil)
    }

    /// Both HTTP codecs out, raw byte relays in; bytes either decoder held beyond the upgrade are relayed.
    func startTunnel(_ exchange: Exchange, context: ChannelHandlerContext) {
        guard let connection = exchange.connection else { return }
        exchange.connection = nil
        connection.delegate = nil
        state = .tunnelling
        services.metrics.request(routeAuth: exchange.routeAuth, outcome: .forwarded)

        let (clientSide, upstreamSide) = TunnelHandler.matchedPair()
        do {
            try Self.replaceHTTPHandlers(on: connection.channel, with: upstreamSide, removing: [
                { try $0.handler(type: UpstreamConnection.self) },
                { try $0.handler(type: HTTPRequestEncoder.self) },
                { try $0.handler(type: ByteToMessageHandler<HTTPResponseDecoder>.self) },
            ])
            try Self.replaceHTTPHandlers(on: context.channel, with: clientSide, removing: [
                { try $0.handler(type: ClientConnectionHandler.self) },
                { try $0.handler(type: NIOHTTPResponseHeadersValidator.self) },
                { try $0.handler(type: HTTPServerPipelineHandler.self) },
                { try $0.handler(type: HTTPResponseEncoder.self) },
                { try $0.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self) },
            ])
        } catch {
            services.logger.warning("could not start WebSocket tunnel", metadata: ["gatehouse.error": "\(error)"])
            connection.channel.close(promise: nil)
            context.close(promise: nil)
            return
        }
        // Bytes the decoders held beyond the upgrade were relayed during removal: send them now.
        connection.channel.flush()
        context.channel.flush()
        connection.channel.setOption(ChannelOptions.autoRead, value: true).whenComplete { _ in }
        context.channel.setOption(ChannelOptions.autoRead, value: true).whenComplete { _ in }
    }

    /// Adds the tunnel handler last, then removes the HTTP handlers; the decoders go last so the bytes
    /// they hold beyond the upgrade reach the tunnel.
    private static func replaceHTTPHandlers(
        on channel: any Channel,
        with tunnel: TunnelHandler,
        removing handlers: [(ChannelPipeline.SynchronousOperations) throws -> any RemovableChannelHandler]
    ) throws {
        let pipeline = channel.pipeline.syncOperations
        try pipeline.addHandler(tunnel)
        for handler in handlers {
            _ = pipeline.removeHandler(try handler(pipeline))
        }
    }
}
