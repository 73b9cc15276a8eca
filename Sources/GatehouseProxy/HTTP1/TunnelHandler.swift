package import NIOCore

/// Relays raw bytes between two channels after a WebSocket upgrade, with backpressure each way;
/// when one side closes, so does the other. (The pattern of SwiftNIO's connect-proxy `GlueHandler`.)
package final class TunnelHandler: ChannelDuplexHandler {
    package typealias InboundIn = NIOAny
    package typealias OutboundIn = NIOAny
    package typealias OutboundOut = NIOAny

    private var partner: TunnelHandler?
    private var context: ChannelHandlerContext?
    private var pendingRead = false

    package static func matchedPair() -> (TunnelHandler, TunnelHandler) {
        let first = TunnelHandler()
        let second = TunnelHandler()
        first.partner = second
        second.partner = first
        return (first, second)
    }

    package func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    package func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        partner = nil
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        partner?.context?.write(data, promise: nil)
    }

    package func channelReadComplete(context: ChannelHandlerContext) {
        partner?.context?.flush()
    }

    package func channelInactive(context: ChannelHandlerContext) {
        partner?.context?.close(promise: nil)
    }

    package func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, case .inputClosed = event {
            partner?.context?.close(mode: .output, promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }

    package func errorCaught(context: ChannelHandlerContext, error: any Error) {
        partner?.context?.close(promise: nil)
        context.close(promise: nil)
    }

    package func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, let partner, partner.pendingRead {
            partner.pendingRead = false
            partner.context?.read()
        }
    }

    package func read(context: ChannelHandlerContext) {
        if partner?.context?.channel.isWritable ?? false {
            context.read()
        } else {
            pendingRead = true
        }
    }
}
