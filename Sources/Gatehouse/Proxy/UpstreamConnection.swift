import NIOCore
import NIOHTTP1

/// What an upstream connection reports to the client connection currently using it.
/// Both live on the same event loop, so these are plain calls.
protocol UpstreamConnectionDelegate: AnyObject {
    func upstreamReceived(_ part: HTTPClientResponsePart)
    func upstreamReadComplete()
    func upstreamWritabilityChanged(isWritable: Bool)
    func upstreamClosed()
}

/// One keep-alive connection to the upstream, and the handler at the end of its pipeline.
final class UpstreamConnection: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart

    let channel: any Channel
    /// Whether this connection served a request before (a failure on it may be a stale keep-alive).
    var isReused = false
    weak var delegate: (any UpstreamConnectionDelegate)?
    /// Set by the pool while the connection idles in it; called when the upstream closes it.
    var onIdleClose: ((UpstreamConnection) -> Void)?

    init(channel: any Channel) {
        self.channel = channel
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let delegate else {
            // Bytes on an idle connection: the upstream broke the protocol; never reuse it.
            context.close(promise: nil)
            return
        }
        delegate.upstreamReceived(unwrapInboundIn(data))
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        delegate?.upstreamReadComplete()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        delegate?.upstreamWritabilityChanged(isWritable: context.channel.isWritable)
    }

    func channelInactive(context: ChannelHandlerContext) {
        onIdleClose?(self)
        delegate?.upstreamClosed()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

extension UpstreamConnection: RemovableChannelHandler {}
