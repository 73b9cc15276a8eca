import NIOCore
import NIOHTTP1
import GatehouseSyntax
import GatehouseHTTP

/// One client stream of an HTTP/2 connection (`HTTP2ServerConnection`): its header blocks read by Gatehouse's
/// rules (`HTTP2RequestHeadReader`) into its exchange, its answer handed to the connection's codec, with the
/// stream's flow control kept here:
/// - inbound, what arrives while the exchange does not read (deciding, connecting, an upstream that takes no
///   more) is held, and the stream's window is opened again only as its bytes are handed on (`consumed`);
/// - outbound, the bytes written and not yet sent make the stream unwritable past `highWatermark`
///   (the exchange stops reading the upstream), and a stream whose writes do not move for
///   `idle_timeout` is reset (a client that never opens its window).
final class HTTP2ServerStream: StreamTransport, HTTP2ServerStreamHandling {
    let id: Int32
    /// Strong: the connection drops the stream from its table once it is closed.
    private let connection: HTTP2ServerConnection
    /// Dropped once the stream is closed (the driver keeps its transport until it is done with it).
    private(set) var driver: StreamDriver?
    private var flow = HTTP2StreamFlow<HTTP2StreamPart>()
    private var isDelivering = false
    /// The head was refused (400): its body is not handed on.
    private var headRefused = false
    private var headRead = false
    private(set) var isClosed = false
    private var lastWriteProgress = NIODeadline.now()
    /// Writes are pending since then; judged stalled `idle_timeout` after their last progress.
    private var stallWatch = false
    private let idleTimeout: TimeAmount
    private var heldHead: [NGHTTP2Session.OutboundField]?
    /// Where the answer's end is: not written, written (`writeEnd`, or a head that ends the stream) and not yet out,
    /// or out. A reset asked for while it is on its way (`finish(completed: false)`) waits for it: nghttp2 would drop it.
    private var end = AnswerEnd.unwritten
    private enum AnswerEnd {
        case unwritten
        case written(resetsAfter: Bool)
        case out
    }
    /// The end was queued behind the body (`writeEnd` after DATA): counted as a write until it goes out.
    private var isEndCounted = false
    /// `[listen] max_header_bytes`: the head's section, then what it leaves for the trailers.
    private var headerBytesLeft: Int
    /// The head's `content-length`, held against the DATA.
    private var declaredLength = HTTP2DeclaredLength(declared: nil)

    init(id: Int32, connection: HTTP2ServerConnection, driverConnection: StreamDriver.Connection,
         idleTimeout: TimeAmount, maxHeaderBytes: Int) {
        self.id = id
        self.connection = connection
        self.idleTimeout = idleTimeout
        self.headerBytesLeft = maxHeaderBytes
        self.driver = StreamDriver(connection: driverConnection, transport: self)
    }

    var eventLoop: any EventLoop { connection.eventLoop }
    var allocator: ByteBufferAllocator { connection.allocator }
    var clientVersion: HTTPVersion? { nil }
    var isWritable: Bool { flow.isWritable && connection.isWritable }

    // MARK: - Inbound

    /// A header block or DATA of this stream, within the connection's read.
    func received(_ part: consuming HTTP2StreamPart) {
        guard !isClosed, let part = flow.arrived(consume part) else { return }
        deliver(consume part)
    }

    func readBegan() {
        driver?.readBegan()
    }

    /// The connection's read is over: the exchange reads on only if it asks again.
    func readComplete() {
        flow.readEnded()
        driver?.readComplete()
    }

    func readRequest() {
        flow.requestRead()
        guard flow.hasHeldFrames, !isDelivering else { return }
        // Hand on what was held, as one read of its own.
        isDelivering = true
        driver?.readBegan()
        while !isClosed, let part = flow.nextHeld() { deliver(part, readStarted: true) }
        isDelivering = false
        readComplete()
        connection.flushSoon()
    }

    private func deliver(_ part: consuming HTTP2StreamPart, readStarted: Bool = false) {
        if !readStarted { connection.streamRead(self) }
        // No `where` on a case that binds the block: its binding would be a copy, and the reader, which takes the
        // block's strings, would copy the whole block.
        switch consume part {
        case .fields(let fields, let endStream):
            if headRead {
                readTrailers(consume fields)
            } else {
                headRead = true
                readHead(consume fields, endStream: endStream)
            }
        case .data(let buffer, let endStream):
            guard declaredLength.received(buffer.readableBytes, endStream: endStream) else { return malformedBody() }
            if buffer.readableBytes > 0 {
                connection.consumed(id, bytes: buffer.readableBytes)
                if !headRefused { driver?.receivedBody(buffer) }
            }
            if endStream { driver?.receivedEnd(trailers: nil) }
        }
    }

    private func readHead(_ fields: consuming HTTP2FieldList, endStream: Bool) {
        switch HTTP2RequestHeadReader.read(fields: consume fields, endStream: endStream, maxHeaderBytes: headerBytesLeft) {
        case .success(let read):
            headerBytesLeft -= read.sectionBytes
            declaredLength = HTTP2DeclaredLength(declared: read.contentLength)
            if endStream && !declaredLength.received(0, endStream: true) {
                headRefused = true
                return malformedBody()
            }
            driver?.receivedHead(read.head)
        case .failure(let malformed) where malformed.answer == .reset:
            headRefused = true
            driver?.transportClosed()
            reset(HTTP2ConnectionError.protocolError)
            return
        case .failure(let malformed):
            headRefused = true
            driver?.receivedMalformedHead(malformed.reason, status: malformed.answer == .tooLarge ? .requestHeaderFieldsTooLarge : .badRequest)
        }
        if endStream { driver?.receivedEnd(trailers: nil) }
    }

    private func readTrailers(_ fields: consuming HTTP2FieldList) {
        guard declaredLength.received(0, endStream: true) else { return malformedBody() }
        switch HTTP2RequestHeadReader.readTrailers(fields: consume fields, maxBytes: headerBytesLeft) {
        case .success(let trailers):
            driver?.receivedEnd(trailers: headRefused ? nil : trailers)
        case .failure:
            // Its head was judged and may be forwarded already: the stream is reset.
            driver?.transportClosed()
            reset(HTTP2ConnectionError.protocolError)
        }
    }

    /// DATA that does not add up to the declared `content-length`: malformed, the stream is reset before any of it
    /// is handed on.
    private func malformedBody() {
        driver?.transportClosed()
        reset(HTTP2ConnectionError.protocolError)
        connection.streamErred()
    }

    /// The stream is closed (both sides ended, a reset either way, the connection gone).
    func closed() {
        guard !isClosed else { return }
        isClosed = true
        stallWatch = false
        flow.dropHeld()
        if driver?.isDone == false { driver?.transportClosed() }
        driver = nil
    }

    // MARK: - Outbound

    /// A response head is held until what follows it is known: an end with nothing between goes out
    /// as one HEADERS frame with END_STREAM, the "trailers-only" form gRPC requires for a call answered
    /// without a message (an upstream's refusal relayed), rather than HEADERS and an empty DATA frame.
    /// `closesConnection` is an HTTP/1.1 matter: a stream ends with its answer anyway.
    func writeHead(_ head: ClientResponseHead, endStream: Bool, closesConnection: Bool) {
        var fields: [NGHTTP2Session.OutboundField] = []
        if case .http2(let status, let block, let requestID) = head {
            // An HTTP/2 upstream's block, its names in lower case already: relayed as it came, less what is not relayed.
            fields.reserveCapacity(block.count + 1)
            fields.append((":status", String(status), true))
            for (name, value) in block where ResponseFields.isRelayed(name) { fields.append((name, value, true)) }
            fields.append((RequestIDField.name, requestID, false))
        } else {
            let head = head.asFields
            fields.reserveCapacity(head.headers.count + 1)
            fields.append((":status", String(head.status.code), true))
            for (name, value) in head.headers {
                let lowered = HTTP2FieldName.lowercased(name)
                if !ResponseFields.isWrittenOnHTTP2(lowered) { continue }  // an upstream's hop-by-hop fields are gone already
                // New on every answer: kept out of the HPACK table (it would only push out what repeats).
                fields.append((lowered, value, lowered != RequestIDField.name))
            }
        }
        if endStream {
            // A reset that follows (`finish(completed: false)`) waits for the head: nghttp2 would drop it.
            end = .written(resetsAfter: false)
            connection.respond(id, fields, hasBody: false)
        } else {
            heldHead = fields
        }
    }

    /// Never asked: the core relays interim heads to HTTP/1.1 clients only (`relaysInformational`); an HTTP/2
    /// stream's answer is one head.
    func writeInformational(_ head: ClientResponseHead) {}

    /// HTTP/2 has no 101 (RFC 9113 §8.6): a stream is never tunnelled.
    func startTunnel(_ head: ClientResponseHead, upstream: UpstreamTunnelEnd) -> Bool { false }

    func writeBody(_ buffer: ByteBuffer) {
        writeHeldHead(hasBody: true)
        guard !isClosed else { return }
        track(bytes: buffer.readableBytes)
        connection.queue(id, buffer)
    }

    /// The end is followed to the socket: a reset that follows it (`finish(completed: false)`) waits for it,
    /// as flow control may hold what is queued before it.
    func writeEnd(trailers: HTTPHeaders?) {
        guard !isClosed else { return }
        end = .written(resetsAfter: false)
        if heldHead != nil && trailers == nil {
            writeHeldHead(hasBody: false)
            return
        }
        writeHeldHead(hasBody: true)
        track(bytes: 0)
        isEndCounted = true
        connection.queueEnd(id, trailers: trailers?.http2Fields)
    }

    func flush() {
        writeHeldHead(hasBody: true)
        connection.flushSoon()
    }

    private func writeHeldHead(hasBody: Bool) {
        guard let head = heldHead else { return }
        heldHead = nil
        connection.respond(id, head, hasBody: hasBody)
    }

    func finish(completed: Bool) {
        guard !completed else { return }
        guard case .written = end else { return reset() }
        end = .written(resetsAfter: true)
    }

    /// The frame that ends the stream on our side went out (the connection's `sessionSentEnd`).
    func endWentOut() {
        if isEndCounted {
            isEndCounted = false
            wrote(0)
        }
        let resets = if case .written(let resetsAfter) = end { resetsAfter } else { false }
        end = .out
        if resets { reset() }
    }

    /// RST_STREAM: CANCEL when the exchange gave up the stream or the client stopped taking it,
    /// PROTOCOL_ERROR for a malformed request (RFC 9113 §8.1.1).
    /// The stream is done with at once: nothing more reaches its exchange, whenever the codec sends the reset.
    private func reset(_ code: UInt32 = HTTP2ConnectionError.cancel) {
        guard !isClosed else { return }
        connection.reset(id, code: code)
        connection.flushSoon()
        closed()
    }

    /// Every write that flow control may hold up (DATA, and the end queued behind it) is followed to the
    /// socket: its bytes count against the watermarks until then (the connection hands them back, `wrote`, with no
    /// promise of their own: `HTTP2WriteLedger`), and writes that do not move for `idle_timeout` reset the stream.
    private func track(bytes: Int) {
        if flow.pendingWrites == 0 { lastWriteProgress = .now() }
        flow.writing(bytes)
        if !stallWatch {
            stallWatch = true
            connection.wake(at: lastWriteProgress + idleTimeout)
        }
    }

    func wrote(_ bytes: Int) {
        lastWriteProgress = .now()
        if flow.wrote(bytes) && connection.isWritable { driver?.transportBecameWritable() }
    }

    func connectionBecameWritable() {
        if flow.isWritable { driver?.transportBecameWritable() }
    }

    func wake(at deadline: NIODeadline) {
        connection.wake(at: deadline)
    }

    /// The connection's timer fired: the exchange's deadline, and writes that have not moved for
    /// `idle_timeout` (a client that never opens its window): reset. Returns the next deadline ahead.
    func deadlinePassed(now: NIODeadline) -> NIODeadline? {
        var next = driver?.deadlinePassed(now: now)
        guard stallWatch, !isClosed else { return next }
        guard flow.pendingWrites > 0 else {
            stallWatch = false
            return next
        }
        let stalledAt = lastWriteProgress + idleTimeout
        if stalledAt <= now {
            stallWatch = false
            driver?.transportClosed()
            reset()
            return nil
        }
        next = min(next ?? stalledAt, stalledAt)
        return next
    }
}
