import Logging
import NIOCore
import NIOHTTP1
import GatehouseHTTP
import GatehouseExchange

/// WebSocket: authenticated like any request; tunnelled only after the upstream's own 101 (the driver's rule).
extension ClientConnectionHandler {
    /// Passes the upstream's 101 to the client, then the HTTP handlers out and raw byte relays in; bytes
    /// either side held beyond the upgrade are relayed.
    func startTunnel(_ head: ClientResponseHead, upstream: UpstreamTunnelEnd) -> Bool {
        guard let context, case .exchanging(let driver) = state, let request = driver.core.inHand else { return false }
        state = .tunnelling
        let services = driver.services
        writeHeldHead(context: context)
        context.write(
            wrapOutboundOut(HTTPHeadWriter.clientResponseHead(
                head, version: request.head.version, extraFields: [.webSocketUpgrade], allocator: allocator)),
            promise: nil)
        let (clientSide, upstreamSide) = TunnelHandler.matchedPair()
        do {
            // Both relays in place before either side hands over the bytes it held.
            try upstream.attach(upstreamSide)
            try context.channel.pipeline.syncOperations.addHandler(clientSide)
            upstream.releaseHTTPHandler()
            // Client bytes read beyond the upgrade request go to the tunnel, which is next in line.
            if unparsed.readableBytes > 0 {
                context.fireChannelRead(wrapInboundOut(unparsed))
                unparsed = ByteBuffer()
            }
            _ = context.pipeline.syncOperations.removeHandler(context: context)
        } catch {
            services.logger.warning("could not start WebSocket tunnel", metadata: ["gatehouse.error": "\(error)"])
            upstream.channel.close(promise: nil)
            context.close(promise: nil)
            return true
        }
        // The 101 and the bytes held beyond the upgrade were relayed: send them now.
        upstream.channel.flush()
        context.channel.flush()
        upstream.channel.setOption(ChannelOptions.autoRead, value: true).whenComplete { _ in }
        context.channel.setOption(ChannelOptions.autoRead, value: true).whenComplete { _ in }
        return true
    }
}
