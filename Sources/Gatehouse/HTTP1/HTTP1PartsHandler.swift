import NIOCore
import NIOHTTP1

/// An HTTP/1.1 client connection in front of an HTTP/2 upstream: requests in parts (Gatehouse's
/// parser as a decoder, `HTTP1RequestDecoder`, and NIO's response encoder), one `StreamDriver` per
/// request, one request after the other, as an HTTP/2 stream's exchange is driven. A keep-alive
/// connection must send its next head within `idle_timeout`.
final class HTTP1PartsHandler: ChannelInboundHandler, StreamTransport {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let connection: StreamDriver.Connection
    private var exchange: StreamDriver?
    private var context: ChannelHandlerContext?
    private var idleTimer: Scheduled<Void>?
    private var exchangeTimer = WakeTimer()
    let eventLoop: any EventLoop

    init(connection: StreamDriver.Connection, eventLoop: any EventLoop) {
        self.connection = connection
        self.eventLoop = eventLoop
    }

    var allocator: ByteBufferAllocator { context?.channel.allocator ?? ByteBufferAllocator() }
    var isWritable: Bool { context?.channel.isWritable ?? false }
    var clientVersion: HTTPVersion? { exchange?.request?.head.version ?? .http1_1 }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        idleTimer?.cancel()
        exchangeTimer.cancel()
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        context.read()
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        idleTimer?.cancel()
        exchange?.transportClosed()
        exchange = nil
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        if case .head = part, exchange == nil {
            idleTimer?.cancel()
            exchange = StreamDriver(connection: connection, transport: self)
        }
        guard let exchange else { return }
        exchange.readBegan()
        switch part {
        case .head(let head): exchange.receivedHead(head)
        case .body(let buffer): exchange.receivedBody(buffer)
        case .end(let trailers): exchange.receivedEnd(trailers: trailers)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if let exchange {
            exchange.readComplete()
        } else {
            context.read()
        }
        context.fireChannelReadComplete()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { exchange?.transportBecameWritable() }
        context.fireChannelWritabilityChanged()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        exchange?.transportClosed()
        exchange = nil
        context.close(promise: nil)
    }

    // MARK: - StreamTransport

    func writeHead(_ head: HTTPResponseHead, endStream: Bool) {
        context?.write(wrapOutboundOut(.head(head)), promise: nil)
        if endStream { context?.write(wrapOutboundOut(.end(nil)), promise: nil) }
    }

    func writeBody(_ buffer: ByteBuffer) {
        context?.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
    }

    func writeEnd(trailers: HTTPHeaders?, promise: EventLoopPromise<Void>?) {
        guard let context else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        context.write(wrapOutboundOut(.end(trailers)), promise: promise)
    }

    func flush() {
        context?.flush()
    }

    func readRequest() {
        context?.read()
    }

    func wake(at deadline: NIODeadline) {
        exchangeTimer.wake(at: deadline, on: eventLoop) { [weak self] in
            guard let self else { return }
            self.exchangeTimer.fired()
            if let next = self.exchange?.deadlinePassed(now: .now()) { self.wake(at: next) }
        }
    }

    /// A whole exchange on a keep-alive connection: wait for the next head; anything else closes.
    func finish(completed: Bool) {
        guard let context else { return }
        let keepAlive = completed && exchange?.request?.head.isKeepAlive == true
        exchange = nil
        guard keepAlive else {
            context.close(promise: nil)
            return
        }
        let idleTimeout = connection.handle.services.idleTimeout
        idleTimer = context.eventLoop.assumeIsolated().scheduleTask(in: idleTimeout) { context.close(promise: nil) }
        context.read()
    }
}
