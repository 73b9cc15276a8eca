import NIOCore
import NIOHTTP1
import NIOHTTP2

/// One request on a multiplexed HTTP/2 upstream connection: the last handler of its stream
/// channel, behind NIO's HTTP/2-to-HTTP/1 parts codec. Trailers pass both ways; reads are manual,
/// so HTTP/2 flow control reaches the upstream when the client is slow.
final class HTTP2UpstreamLeg: ChannelInboundHandler, UpstreamLeg {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    weak var delegate: (any UpstreamLegDelegate)?
    private let channel: any Channel
    private var requestID = ""
    private var headReceived = false
    private var ended = false
    private var refused = false

    init(channel: any Channel) {
        self.channel = channel
    }

    var isWritable: Bool { channel.isWritable }

    func start(_ request: UpstreamRequestHead.Request, admission: Gatekeeper.Admission, services: ProxyServices, hasBody: Bool) {
        requestID = request.requestID
        channel.write(wrapOutboundOut(.head(services.upstreamHead.makeHead(request, admission: admission))), promise: nil)
        channel.read()
    }

    func writeBody(_ buffer: ByteBuffer) {
        channel.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
    }

    func writeEnd(trailers: HTTPHeaders?) {
        channel.write(wrapOutboundOut(.end(trailers)), promise: nil)
    }

    func flush() { channel.flush() }

    func read() { channel.read() }

    /// A stream that did not complete is reset (the upstream stops working on it).
    func finish(completed: Bool) {
        delegate = nil
        if !(completed && ended) { channel.close(promise: nil) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            // 1xx heads are not relayed: the client's stream takes one response head.
            guard !(100..<200).contains(head.status.code) else { return }
            headReceived = true
            var relayed = head
            relayed.headers.remove(name: "x-request-id")
            relayed.headers.add(name: "x-request-id", value: requestID)
            delegate?.upstreamLegReceivedHead(relayed)
        case .body(let buffer):
            delegate?.upstreamLegReceivedBody(buffer)
        case .end(let trailers):
            ended = true
            delegate?.upstreamLegReceivedEnd(trailers: trailers)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        delegate?.upstreamLegReadComplete()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        delegate?.upstreamLegWritabilityChanged(isWritable: context.channel.isWritable)
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // REFUSED_STREAM (RFC 9113 §8.7): the upstream did not process it, e.g. past a GOAWAY.
        if let closed = event as? StreamClosedEvent, closed.reason == .refusedStream { refused = true }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !ended, let delegate {
            self.delegate = nil
            delegate.upstreamLegFailed(retryable: refused && !headReceived)
        }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
