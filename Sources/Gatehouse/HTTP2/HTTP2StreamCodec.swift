import NIOCore
import NIOHPACK
import NIOHTTP1
import NIOHTTP2

/// A client stream's frames as request parts for `StreamRequestHandler`, and its response parts as
/// frames: NIO's `HTTP2FramePayloadToHTTP1ServerCodec`, with the request head read by Gatehouse's
/// rules (`HTTP2RequestHeadReader`) instead of NIO's (which took `host` over `:authority`, reset a
/// request without `:authority`, and let through values and methods the HTTP/1.1 parser refuses).
///
/// A malformed request head reaches the handler as an inbound user event, `HTTP2RequestHeadReader.Malformed`
/// (answered 400; no part of that request follows but its end); a malformed trailer section as an error
/// (the stream is reset: its head was judged and may be forwarded already).
final class HTTP2StreamCodec: ChannelDuplexHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTP2Frame.FramePayload

    private var headRead = false
    private var refused = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .headers(let headers) where !headRead:
            headRead = true
            switch HTTP2RequestHeadReader.read(headers.headers, endStream: headers.endStream) {
            case .success(let head):
                context.fireChannelRead(wrapInboundOut(.head(head)))
            case .failure(let malformed):
                refused = true
                context.fireUserInboundEventTriggered(malformed)
            }
            if headers.endStream { context.fireChannelRead(wrapInboundOut(.end(nil))) }
        case .headers(let headers):
            switch HTTP2RequestHeadReader.readTrailers(headers.headers) {
            case .success(let trailers):
                context.fireChannelRead(wrapInboundOut(.end(refused ? nil : trailers)))
            case .failure(let malformed):
                context.fireErrorCaught(malformed)
            }
        case .data(let data):
            guard case .byteBuffer(let buffer) = data.data else { return }
            if buffer.readableBytes > 0 && !refused { context.fireChannelRead(wrapInboundOut(.body(buffer))) }
            if data.endStream { context.fireChannelRead(wrapInboundOut(.end(nil))) }
        default:
            break
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let payload: HTTP2Frame.FramePayload
        switch unwrapOutboundIn(data) {
        case .head(let head):
            var fields: [(String, String)] = [(":status", String(head.status.code))]
            fields.reserveCapacity(head.headers.count + 1)
            for (name, value) in head.headers { fields.append((name, value)) }
            payload = .headers(.init(headers: HPACKHeaders(httpHeaders: HTTPHeaders(fields), normalizeHTTPHeaders: true)))
        case .body(let body):
            payload = .data(.init(data: body))
        case .end(let trailers?):
            payload = .headers(.init(headers: HPACKHeaders(httpHeaders: trailers, normalizeHTTPHeaders: true), endStream: true))
        case .end(nil):
            payload = .data(.init(data: .byteBuffer(context.channel.allocator.buffer(capacity: 0)), endStream: true))
        }
        context.write(wrapOutboundOut(payload), promise: promise)
    }
}
