import NIOCore
import NIOHTTP1

/// Answers requests the HTTP decoder refused: 431 for an oversized head, 400 for anything else
/// (smuggling attempts, bad framing, control characters), then lets the connection close.
final class HTTPRequestErrorHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private var hasUnterminatedResponse = false

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let parserError = error as? HTTPParserError else {
            context.fireErrorCaught(error)
            return
        }
        // A connection already closing (bytes left over at EOF) gets no answer: nobody would read it.
        if !hasUnterminatedResponse && context.channel.isActive {
            let status: HTTPResponseStatus = parserError == .headerOverflow ? .requestHeaderFieldsTooLarge : .badRequest
            let headers = HTTPHeaders([("Connection", "close"), ("Content-Length", "0")])
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
        context.close(promise: nil)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head) where head.status.code >= 200 || head.status == .switchingProtocols:
            hasUnterminatedResponse = true
        case .end:
            hasUnterminatedResponse = false
        default:
            break
        }
        context.write(data, promise: promise)
    }
}
