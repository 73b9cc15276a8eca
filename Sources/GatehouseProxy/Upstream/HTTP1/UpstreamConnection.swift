package import NIOCore
package import GatehouseHTTP

/// What an upstream connection reports to the client connection currently using it.
/// Both live on the same event loop, so these are plain calls.
package protocol UpstreamConnectionDelegate: AnyObject {
    /// `now`: when the read that carried the part arrived (one clock reading for every part of a read).
    /// `part` is handed over, not lent: a head goes on into the client's answer without a copy of its references.
    func upstreamReceived(_ part: consuming UpstreamResponseParser.Part, at now: NIODeadline)
    func upstreamReadComplete()
    func upstreamWritabilityChanged(isWritable: Bool)
    /// The connection closed, or its response was malformed (then it is closed too).
    func upstreamClosed()
}

/// One keep-alive connection to the upstream: the only handler of its pipeline (after TLS). It
/// writes request heads it is given as bytes, frames request bodies, and parses responses itself.
package final class UpstreamConnection: ChannelInboundHandler, DeferredFlush {
    package typealias InboundIn = ByteBuffer
    package typealias InboundOut = ByteBuffer
    package typealias OutboundOut = ByteBuffer

    package let channel: any Channel
    /// Whether this connection served a request before (a failure on it may be a stale keep-alive).
    var isReused = false
    /// Whether any byte of the current request's response arrived: only a connection that said
    /// nothing may be retried (the upstream may have acted on the request otherwise).
    private(set) var answered = false
    /// False once the upstream sent more than the response to the request: the framing cannot be
    /// trusted, so the pool closes the connection instead of keeping it.
    private(set) var isReusable = true
    /// The connection's leg while it carries a request (set by the leg, cleared when the leg finishes and when the
    /// pipeline goes). Strong, not `weak`: a weak reference gave the leg a side table, and each call through it a
    /// weak load and every retain of the leg the runtime's slow path.
    package var delegate: (any UpstreamConnectionDelegate)?
    /// The connection's upstream leg, made once and used for each request it serves; let go when the
    /// connection's pipeline goes (the two refer to each other until then).
    var leg: HTTP1UpstreamLeg?
    /// Set by the pool while the connection idles in it, told when the upstream closes it. Strong (a weak reference gave
    /// the pool a side table, and its every retain the slow path): the pool clears it when it takes the connection, and
    /// the close lets it go.
    var idleIn: UpstreamConnectionPool?
    private var parser = UpstreamResponseParser()
    /// The request heads' buffer, used again once each head is sent.
    var headBuffer = ReusedBuffer()
    /// Why the connection was closed, when the upstream's bytes were not an HTTP/1.x response.
    private(set) var protocolError: UpstreamResponseParser.Malformed?
    private var chunkedRequestBody = false
    /// Bytes were written since the last flush: a flush with nothing to send costs NIO a pass for nothing.
    private var hasUnflushedWrites = false
    /// A flush waits for the tick's end.
    private var isFlushDeferred = false
    /// The event loop's batch, looked up at the first flush (on the loop) and kept.
    private lazy var flushBatch = LoopFlushBatch.of(channel.eventLoop)
    /// The request head, written with the first flush or before the first body bytes: a request without a body goes
    /// to NIO as one `writeAndFlush`, not a write and a flush (each a pass through the pipeline).
    private var heldHead: ByteBuffer?
    /// A read was asked for and no bytes came since (NIO's own pending read, which ends as bytes are handed on).
    private var isReadPending = false
    private var context: ChannelHandlerContext?

    /// The channel's allocator, read once: each read of `channel.allocator` takes NIO's lock and a reference.
    package let allocator: ByteBufferAllocator

    init(channel: any Channel) {
        self.channel = channel
        self.allocator = channel.allocator
    }

    package func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    /// Removed for a tunnel: what arrived after the 101 goes on to the next handler.
    package func handlerRemoved(context: ChannelHandlerContext) {
        if let rest = parser.takeBuffered() { context.fireChannelRead(wrapInboundOut(rest)) }
        self.context = nil
        heldHead = nil
        leg = nil
        delegate = nil
        idleIn = nil
    }

    // MARK: Requests

    /// Writes a request head (not flushed); `chunkedBody` says the body is sent chunked.
    func startRequest(head: ByteBuffer, chunkedBody: Bool, isHEAD: Bool) {
        answered = false
        chunkedRequestBody = chunkedBody
        parser.requestWasHEAD = isHEAD
        heldHead = head
        hasUnflushedWrites = true
    }

    func writeBody(_ buffer: ByteBuffer) {
        if chunkedRequestBody {
            ChunkedFraming.writeChunk(buffer, to: { self.write($0) }, allocator: allocator)
        } else {
            write(buffer)
        }
    }

    /// Ends the request body (not flushed).
    func writeEnd() {
        if chunkedRequestBody { write(ChunkedFraming.lastChunk(allocator)) }
    }

    /// Sends what was written, if anything was.
    func flush() {
        guard hasUnflushedWrites else { return }
        hasUnflushedWrites = false
        guard !isFlushDeferred else { return }  // the flush to come is the channel's: it takes these writes too
        isFlushDeferred = true
        flushBatch.flushSoon(self)
    }

    /// The tick's end (`LoopFlushBatch`): the requests written to every upstream connection in it go out together, a
    /// held head with its flush.
    func flushDeferred() {
        isFlushDeferred = false
        if let head = heldHead.take() {
            if let context { context.writeAndFlush(wrapOutboundOut(head), promise: nil) } else { channel.writeAndFlush(head, promise: nil) }
        } else {
            if let context { context.flush() } else { channel.flush() }
        }
    }

    /// Asks for the response's bytes (reads are manual). Once: a read asked for stays pending until bytes come (an idle
    /// connection's, asked for by the pool, serves the next request), and asking again costs NIO a pass for nothing.
    func read() {
        guard !isReadPending else { return }
        isReadPending = true
        if let context { context.read() } else { channel.read() }
    }

    /// From this handler's place in the pipeline (not from its tail, past every handler): the same bytes, fewer calls.
    private func write(_ buffer: ByteBuffer) {
        hasUnflushedWrites = true
        if let head = heldHead.take() { send(head) }
        send(buffer)
    }

    private func send(_ buffer: ByteBuffer) {
        if let context { context.write(wrapOutboundOut(buffer), promise: nil) } else { channel.write(buffer, promise: nil) }
    }

    // MARK: Responses

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        isReadPending = false
        guard delegate != nil else {
            // Bytes on an idle connection: the upstream broke the protocol; never reuse it.
            context.close(promise: nil)
            return
        }
        answered = true
        parser.append(unwrapInboundIn(data))
        let now = NIODeadline.now()
        do {
            while let part = try parser.next() {
                guard case .end = part else {
                    delegate?.upstreamReceived(consume part, at: now)
                    continue
                }
                // One request, one response: anything more means the framing cannot be trusted.
                // Decided before the end is delivered, as delivering it may hand this connection on.
                if !parser.isUpgraded && parser.bufferedBytes > 0 { isReusable = false }
                delegate?.upstreamReceived(part, at: now)
                if !isReusable { context.close(promise: nil) }
                return
            }
        } catch {
            protocolError = error as? UpstreamResponseParser.Malformed
            context.close(promise: nil)  // channelInactive tells the delegate
        }
    }

    package func channelReadComplete(context: ChannelHandlerContext) {
        delegate?.upstreamReadComplete()
    }

    package func channelWritabilityChanged(context: ChannelHandlerContext) {
        delegate?.upstreamWritabilityChanged(isWritable: context.channel.isWritable)
    }

    package func channelInactive(context: ChannelHandlerContext) {
        idleIn?.idleConnectionClosed(self)
        idleIn = nil
        if delegate != nil, let part = try? parser.connectionClosed() {
            delegate?.upstreamReceived(part, at: .now())  // the end of a body delimited by the close
        }
        delegate?.upstreamClosed()
    }

    package func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

extension UpstreamConnection: RemovableChannelHandler {}
