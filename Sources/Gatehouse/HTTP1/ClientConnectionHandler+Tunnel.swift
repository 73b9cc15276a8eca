import Logging
import NIOCore
import NIOHTTP1

/// WebSocket: authenticated like any request; tunnelled only after the upstream's own 101.
extension ClientConnectionHandler {
    /// Passes the upstream's 101 to the client; the tunnel starts when that response ends.
    func acceptUpgrade(_ exchange: HTTP1Forward, response: UpstreamResponseHead, context: ChannelHandlerContext) {
        exchange.responseDeadline = nil
        state = .upgrading(exchange)
        let head = HTTPHeadWriter.relayedResponseHead(
            response, version: exchange.head.version, requestID: exchange.requestID, extraFields: [.webSocketUpgrade],
            allocator: context.channel.allocator)
        context.writeAndFlush(wrapOutboundOut(head), promise: nil)
    }

    /// The HTTP handlers out, raw byte relays in; bytes either side held beyond the upgrade are relayed.
    func startTunnel(_ exchange: HTTP1Forward, context: ChannelHandlerContext) {
        guard let connection = exchange.connection else { return }
        exchange.connection = nil
        connection.delegate = nil
        state = .tunnelling
        services.metrics.request(routeAuth: exchange.routeAuth, outcome: .forwarded)

        let (clientSide, upstreamSide) = TunnelHandler.matchedPair()
        do {
            // Both relays in place before either side hands over the bytes it held.
            try connection.channel.pipeline.syncOperations.addHandler(upstreamSide)
            try context.channel.pipeline.syncOperations.addHandler(clientSide)
            try Self.removeHTTPHandlers(on: connection.channel, [
                { try $0.handler(type: UpstreamConnection.self) },
            ])
            // Client bytes read beyond the upgrade request go to the tunnel, which is next in line.
            if unparsed.readableBytes > 0 {
                context.fireChannelRead(wrapInboundOut(unparsed))
                unparsed = ByteBuffer()
            }
            try Self.removeHTTPHandlers(on: context.channel, [
                { try $0.handler(type: ClientConnectionHandler.self) },
            ])
        } catch {
            services.logger.warning("could not start WebSocket tunnel", metadata: ["gatehouse.error": "\(error)"])
            connection.channel.close(promise: nil)
            context.close(promise: nil)
            return
        }
        // Bytes held beyond the upgrade were relayed: send them now.
        connection.channel.flush()
        context.channel.flush()
        connection.channel.setOption(ChannelOptions.autoRead, value: true).whenComplete { _ in }
        context.channel.setOption(ChannelOptions.autoRead, value: true).whenComplete { _ in }
    }

    /// Removes the HTTP handlers in order; the decoding ones go last so the bytes they hold beyond
    /// the upgrade reach the tunnel.
    private static func removeHTTPHandlers(
        on channel: any Channel,
        _ handlers: [(ChannelPipeline.SynchronousOperations) throws -> any RemovableChannelHandler]
    ) throws {
        let pipeline = channel.pipeline.syncOperations
        for handler in handlers {
            _ = pipeline.removeHandler(try handler(pipeline))
        }
    }
}
