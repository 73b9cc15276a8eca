import NIOCore
import NIOHTTP2

/// Below NIO's HTTP/2-to-HTTP/1 server codec: a response head followed, before any flush, by an
/// end without body or trailers goes out as one HEADERS frame with END_STREAM. That is the
/// "trailers-only" form gRPC requires for a call refused before any message (the codec alone
/// would send HEADERS, then an empty DATA frame with END_STREAM).
final class HeadersEndStreamCoalescer: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    private var held: (HTTP2Frame.FramePayload.Headers, EventLoopPromise<Void>?)?

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let payload = unwrapOutboundIn(data)
        if let (headers, heldPromise) = held {
            held = nil
            if case .data(let data) = payload, data.endStream, data.data.readableBytes == 0 {
                var merged = headers
                merged.endStream = true
                heldPromise?.futureResult.cascade(to: promise)
                context.write(wrapOutboundOut(.headers(merged)), promise: heldPromise ?? promise)
                return
            }
            context.write(wrapOutboundOut(.headers(headers)), promise: heldPromise)
        }
        if case .headers(let headers) = payload, !headers.endStream {
            held = (headers, promise)
            return
        }
        context.write(data, promise: promise)
    }

    func flush(context: ChannelHandlerContext) {
        if let (headers, promise) = held {
            held = nil
            context.write(wrapOutboundOut(.headers(headers)), promise: promise)
        }
        context.flush()
    }
}
