package import NIOCore

/// Closes the connection when NIO's `IdleStateHandler` before it reports that nothing was read for its timeout
/// (the ext_authz port's HTTP/1.1 connections: a caller that stalls mid-request, or holds a connection unused).
package final class IdleConnectionCloser: ChannelInboundHandler {
    package typealias InboundIn = NIOAny

    package init() {}

    package func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let idle = event as? IdleStateHandler.IdleStateEvent, idle == .read {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }
}
