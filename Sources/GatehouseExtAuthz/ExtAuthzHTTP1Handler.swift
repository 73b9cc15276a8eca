import NIOCore
import NIOHTTP1
import GatehouseAuth
import GatehouseExchange
import GatehouseProxy
import GatehouseVocabulary

/// The `[ext_authz]` port's HTTP/1.1 door (Envoy's HTTP protocol over an HTTP/1.1 cluster), behind NIO's HTTP/1
/// server pipeline: a request's parts in, `ExtAuthzResponder`'s answer out.
final class ExtAuthzHTTP1Handler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let responder: ExtAuthzResponder
    private var head: HTTPRequestHead?
    private var body = CheckRequestBody()
    private var startedAt = NIODeadline.now()
    private let tokenMemory = ConnectionTokenMemory()

    init(context: ExtAuthzContext) {
        self.responder = ExtAuthzResponder(context: context)
    }

    func channelRead(context channelContext: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = CheckRequestBody()
            startedAt = .now()
        case .body(var part):
            body.append(&part)
        case .end:
            guard let head else { return }
            self.head = nil
            let request = ExtAuthzResponder.Request(
                method: head.method, uri: head.uri, headers: head.headers, body: body.bytes, bodyTooLarge: body.isTooLarge,
                peerIP: channelContext.channel.remoteAddress?.ipAddress ?? "", startedAt: startedAt, isHTTP2: false)
            responder.respond(to: request, tokenMemory: tokenMemory, on: channelContext.eventLoop).whenReady { answer in
                self.write(answer, version: head.version, keepAlive: head.isKeepAlive, context: channelContext)
            }
        }
    }

    private func write(_ answer: ExtAuthzResponder.Answer, version: HTTPVersion, keepAlive: Bool, context channelContext: ChannelHandlerContext) {
        var headers = HTTPHeaders()
        var status = HTTPResponseStatus.ok
        var body: ByteBuffer?
        var trailers: HTTPHeaders?
        switch answer {
        case .grpc(let message, let code, let statusMessage):
            headers.add(name: "content-type", value: "application/grpc")
            body = message.map { GRPCMessageFraming.frame($0, allocator: channelContext.channel.allocator) }
            trailers = GRPCMessageFraming.trailers(status: code, message: statusMessage)
        case .http(let httpStatus, let httpHeaders, let text):
            status = httpStatus
            headers = httpHeaders
            headers.replaceOrAdd(name: "content-length", value: String(text.utf8.count))
            if !text.isEmpty {
                var buffer = channelContext.channel.allocator.buffer(capacity: text.utf8.count)
                buffer.writeString(text)
                body = buffer
            }
        }
        channelContext.write(wrapOutboundOut(.head(HTTPResponseHead(version: version, status: status, headers: headers))), promise: nil)
        if let body { channelContext.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil) }
        let written = channelContext.writeAndFlush(wrapOutboundOut(.end(trailers)))
        // A caller that asked for `Connection: close` (or HTTP/1.0 without keep-alive) has its connection closed after the answer.
        if !keepAlive { written.assumeIsolated().whenComplete { _ in channelContext.close(promise: nil) } }
    }
}
