import NIOCore
import NIOHTTP1
import GatehouseHTTP
import GatehouseExchange

/// The HTTP/1.1 door as its current request's `StreamTransport`: the driver's answers framed as HTTP/1.1 bytes
/// for the client's version. A body without a length goes chunked to an HTTP/1.1 client; an HTTP/1.0 client
/// cannot take chunks, so its body ends at close. Response trailers are dropped (reference §5).
extension ClientConnectionHandler: StreamTransport {
    var clientVersion: HTTPVersion? { currentRequest?.head.version ?? .http1_1 }

    private var currentRequest: ExchangeRequest? {
        guard case .exchanging(let driver) = state else { return nil }
        return driver.core.inHand
    }

    func writeHead(_ head: ClientResponseHead, endStream: Bool, closesConnection: Bool) {
        guard let context, let request = currentRequest else { return }
        let version = request.head.version
        let clientTakesChunks = version.major == 1 && version.minor >= 1
        response.started = true
        response.chunked = false
        var framed = true
        if head.mayHaveBody(endStream: endStream, isHEAD: request.isHEAD) {
            response.chunked = clientTakesChunks
            framed = clientTakesChunks
        }
        response.keepAlive = !closesConnection && framed && request.head.clientKeepAlive && !isQuiescing
        var extra: HTTPHeadWriter.RelayedFields = response.chunked ? [.chunked] : []
        if !response.keepAlive {
            extra.insert(.connectionClose)
        } else if !clientTakesChunks {
            extra.insert(.connectionKeepAlive)
        }
        writeResponseHead(head, version: version, extraFields: extra, context: context)
    }

    func writeInformational(_ head: ClientResponseHead) {
        guard let context, let request = currentRequest else { return }
        writeResponseHead(head, version: request.head.version, extraFields: [], context: context)
    }

    /// Into the connection's reused head buffer: a warm connection's heads allocate nothing.
    private func writeResponseHead(
        _ head: ClientResponseHead, version: HTTPVersion, extraFields: HTTPHeadWriter.RelayedFields, context: ChannelHandlerContext
    ) {
        writeHeldHead(context: context)
        var bytes = headBuffer.take(capacity: HTTPHeadWriter.estimatedSize(of: head), allocator: allocator)
        HTTPHeadWriter.writeClientResponseHead(head, version: version, extraFields: extraFields, into: &bytes)
        heldHead = bytes
        response.unflushed = true
    }

    func writeBody(_ buffer: ByteBuffer) {
        guard let context else { return }
        if response.chunked {
            ChunkedFraming.writeChunk(buffer, to: { self.write($0, context: context) }, allocator: allocator)
        } else {
            write(buffer, context: context)
        }
    }

    func writeEnd(trailers: HTTPHeaders?) {
        guard let context, response.chunked else { return }
        write(ChunkedFraming.lastChunk(allocator), context: context)
    }

    func flush() {
        flushWrites()
    }

    /// Body bytes that follow a head still held go out with it, copied into its buffer while that stays small: a
    /// short answer (its head and its body, or a chunk's framing, in the same upstream read) is one write to NIO and
    /// one piece for the socket, not one per part.
    private func write(_ bytes: ByteBuffer, context: ChannelHandlerContext) {
        response.unflushed = true
        if var head = heldHead.take() {
            if head.readableBytes + bytes.readableBytes <= Self.maxHeldBytes {
                head.writeImmutableBuffer(bytes)
                heldHead = head
                return
            }
            send(head, context: context)
        }
        context.write(wrapOutboundOut(bytes), promise: nil)
    }

    /// A head and what was copied after it: the buffer is kept to be used again once this write went out.
    private func send(_ head: ByteBuffer, context: ChannelHandlerContext) {
        headBuffer.keep(head)
        context.write(wrapOutboundOut(head), promise: nil)
    }

    /// Writes the held head, if any (before anything written past `write`, and at each flush).
    func writeHeldHead(context: ChannelHandlerContext) {
        if let head = heldHead.take() { send(head, context: context) }
    }

    /// Flushes what was written since the last flush (the driver's and the door's flush of one answer are one).
    /// A held head (and what was copied after it) goes with the flush: one pass through the pipeline, not two.
    ///
    /// The flush itself waits for the end of the event loop's tick (`LoopFlushBatch`): the answers of every connection
    /// read in it go out together.
    func flushWrites() {
        guard response.unflushed, context != nil else { return }
        response.unflushed = false
        guard !isFlushDeferred else { return }  // the flush to come is the channel's: it takes these writes too
        isFlushDeferred = true
        flushBatch.flushSoon(self)
    }

    /// The tick's end: what was written goes out, a held head with its flush. (A handler that left the pipeline, for
    /// a tunnel, wrote its held head as it left, and the tunnel flushed.)
    func flushDeferred() {
        isFlushDeferred = false
        guard let context else { return }
        if let head = heldHead.take() {
            headBuffer.keep(head)
            context.writeAndFlush(wrapOutboundOut(head), promise: nil)
        } else {
            context.flush()
        }
    }

    func readRequest() {
        guard let context else { return }
        askForRead(context: context)
    }

    func wake(at deadline: NIODeadline) {
        guard let context else { return }
        armWatchdog(for: deadline, context: context)
    }

    /// The answer is written: the next request, or the connection closes (the answer or the client said so,
    /// the request was not read whole, the exchange was given up).
    func finish(completed: Bool) {
        guard let context, case .exchanging = state else { return }
        finishResponse(keepAlive: completed && response.keepAlive, context: context)
    }
}

extension ClientResponseHead {
    /// Whether a body follows that the head does not frame with a length.
    func mayHaveBody(endStream: Bool, isHEAD: Bool) -> Bool {
        switch self {
        case .relayed(let head, _):
            switch head.framing {
            case .none, .contentLength: return false
            case .chunked, .untilClose: return true
            }
        case .fields(let head):
            let code = head.status.code
            if endStream || isHEAD || code < 200 || code == 204 || code == 304 { return false }
            return !head.headers.contains(name: "content-length")
        case .http2(let code, let fields, _):
            if endStream || isHEAD || code < 200 || code == 204 || code == 304 { return false }
            return !fields.contains { $0.0 == "content-length" }
        }
    }
}

/// How the HTTP/1.1 door writes its current answer, chosen with its head.
struct HTTP1ResponseFraming {
    /// A response head is on the wire: an error answer can no longer take its place.
    var started = false
    /// The body goes chunked (an HTTP/1.1 client, a body without a length).
    var chunked = false
    /// The connection stays open after it.
    var keepAlive = false
    /// Bytes were written and not flushed yet: the driver's flush and the door's of one answer are one.
    var unflushed = false
}
