package import NIOCore
import NIOHPACK
package import NIOHTTP1
package import NIOHTTP2
import GatehouseSyntax
package import GatehouseHTTP

/// One client stream of a frame-level HTTP/2 connection (`HTTP2ServerConnectionHandler`): its request
/// frames read by Gatehouse's rules (`HTTP2RequestHeadReader`) into its exchange, its answer written as
/// frames, with the stream's flow control kept here:
/// - inbound, frames that arrive while the exchange does not read (deciding, connecting, an upstream
///   that takes no more) are held, and the stream's window is opened again only as they are handed on;
/// - outbound, the bytes written and not yet sent make the stream unwritable past `highWatermark`
///   (the exchange stops reading the upstream), and a stream whose writes do not move for
///   `idle_timeout` is reset (a client that never opens its window).
package final class HTTP2ServerStream: StreamTransport {
    package let id: HTTP2StreamID
    /// Strong: the connection drops the stream from its table once it is closed.
    private let connection: HTTP2ServerConnectionHandler
    /// Dropped once the stream is closed (the driver keeps its transport until it is done with it).
    private(set) var driver: StreamDriver?
    private var flow: HTTP2StreamFlow
    private var isDelivering = false
    /// The head was refused (400): its body is not handed on.
    private var headRefused = false
    private var headRead = false
    private(set) var isClosed = false
    private var lastWriteProgress = NIODeadline.now()
    /// Writes are pending since then; judged stalled `idle_timeout` after their last progress.
    private var stallWatch = false
    private let idleTimeout: TimeAmount
    private var heldHead: HPACKHeaders?
    /// The answer's end, once written (`writeEnd`).
    private var endWritten: EventLoopFuture<Void>?
    /// `[listen] max_header_bytes`: the head's section, then what it leaves for the trailers.
    private var headerBytesLeft: Int

    package init(id: HTTP2StreamID, connection: HTTP2ServerConnectionHandler, driverConnection: StreamDriver.Connection,
         targetWindow: Int, idleTimeout: TimeAmount, maxHeaderBytes: Int) {
        self.id = id
        self.connection = connection
        self.flow = HTTP2StreamFlow(targetWindow: targetWindow)
        self.idleTimeout = idleTimeout
        self.headerBytesLeft = maxHeaderBytes
        self.driver = StreamDriver(connection: driverConnection, transport: self)
    }

    package var eventLoop: any EventLoop { connection.eventLoop }
    package var allocator: ByteBufferAllocator { connection.allocator }
    package var clientVersion: HTTPVersion? { nil }
    package var isWritable: Bool { flow.isUnderHighWatermark && connection.isWritable }

    // MARK: - Inbound

    /// A frame of this stream, within the connection's read.
    package func received(_ payload: HTTP2Frame.FramePayload) {
        guard !isClosed, let payload = flow.arrived(payload) else { return }
        deliver(payload)
    }

    /// NIO's report of this stream's inbound window.
    package func windowChanged(to size: Int) {
        if let increment = flow.windowChanged(to: size) { connection.sendWindowUpdate(id, increment) }
    }

    /// The connection's read is over: the exchange reads on only if it asks again.
    package func readComplete() {
        flow.readEnded()
        driver?.readComplete()
    }

    package func readRequest() {
        flow.requestRead()
        guard flow.hasHeldFrames, !isDelivering else { return }
        // Hand on what was held, as one read of its own.
        isDelivering = true
        driver?.readBegan()
        while !isClosed, let payload = flow.nextHeld() { deliver(payload, readStarted: true) }
        isDelivering = false
        if let increment = flow.heldFramesDelivered() { connection.sendWindowUpdate(id, increment) }
        readComplete()
    }

    private func deliver(_ payload: HTTP2Frame.FramePayload, readStarted: Bool = false) {
        if !readStarted { connection.streamRead(self) }
        switch payload {
        case .headers(let headers) where !headRead:
            headRead = true
            switch HTTP2RequestHeadReader.read(headers.headers, endStream: headers.endStream, maxHeaderBytes: headerBytesLeft) {
            case .success(let read):
                headerBytesLeft -= read.sectionBytes
                driver?.receivedHead(read.head)
            case .failure(let malformed) where malformed.answer == .reset:
                headRefused = true
                driver?.transportClosed()
                reset(.protocolError)
                return
            case .failure(let malformed):
                headRefused = true
                driver?.receivedMalformedHead(malformed.reason, status: malformed.answer == .tooLarge ? .requestHeaderFieldsTooLarge : .badRequest)
            }
            if headers.endStream { driver?.receivedEnd(trailers: nil) }
        case .headers(let headers):
            switch HTTP2RequestHeadReader.readTrailers(headers.headers, maxBytes: headerBytesLeft) {
            case .success(let trailers):
                driver?.receivedEnd(trailers: headRefused ? nil : trailers)
            case .failure:
                // Its head was judged and may be forwarded already: the stream is reset.
                driver?.transportClosed()
                reset(.protocolError)
            }
        case .data(let data):
            guard case .byteBuffer(let buffer) = data.data else { return }
            if buffer.readableBytes > 0 && !headRefused { driver?.receivedBody(buffer) }
            if data.endStream { driver?.receivedEnd(trailers: nil) }
        default:
            break
        }
    }

    /// NIO closed the stream (both sides ended, a reset either way, the connection gone).
    package func closed() {
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
    package func writeHead(_ head: ClientResponseHead, endStream: Bool, closesConnection: Bool) {
        let head = head.asFields
        var fields = HPACKHeaders()
        fields.reserveCapacity(head.headers.count + 1)
        fields.add(name: ":status", value: String(head.status.code))
        for (name, value) in head.headers {
            let lowered = HTTP2FieldName.lowercased(name)
            if !ResponseFields.isWrittenOnHTTP2(lowered) { continue }  // an upstream's hop-by-hop fields are gone already
            // New on every answer: kept out of the HPACK table (it would only push out what repeats).
            fields.add(name: lowered, value: value, indexing: lowered == RequestIDField.name ? .nonIndexable : .indexable)
        }
        if endStream {
            write(.headers(.init(headers: fields, endStream: true)), bytes: 0, promise: nil)
        } else {
            heldHead = fields
        }
    }

    /// Never asked: the core relays interim heads to HTTP/1.1 clients only (`relaysInformational`); an HTTP/2
    /// stream's answer is one head.
    package func writeInformational(_ head: ClientResponseHead) {}

    /// HTTP/2 has no 101 (RFC 9113 §8.6): a stream is never tunnelled.
    package func startTunnel(_ head: ClientResponseHead, upstream: UpstreamTunnelEnd) -> Bool { false }

    package func writeBody(_ buffer: ByteBuffer) {
        writeHeldHead()
        write(.data(.init(data: .byteBuffer(buffer))), bytes: buffer.readableBytes, promise: nil)
    }

    /// The end is followed to the socket: a reset that follows it (`finish(completed: false)`) waits for it,
    /// as flow control may hold what is queued before it.
    package func writeEnd(trailers: HTTPHeaders?) {
        let promise = eventLoop.makePromise(of: Void.self)
        endWritten = promise.futureResult
        if let trailers {
            writeHeldHead()
            write(.headers(.init(headers: HPACKHeaders(httpHeaders: trailers, normalizeHTTPHeaders: true), endStream: true)),
                  bytes: 0, promise: promise)
        } else if let head = heldHead {
            heldHead = nil
            write(.headers(.init(headers: head, endStream: true)), bytes: 0, promise: promise)
        } else {
            write(.data(.init(data: .byteBuffer(allocator.buffer(capacity: 0)), endStream: true)), bytes: 0, promise: promise)
        }
    }

    package func flush() {
        writeHeldHead()
        connection.flushSoon()
    }

    private func writeHeldHead() {
        guard let head = heldHead else { return }
        heldHead = nil
        write(.headers(.init(headers: head, endStream: false)), bytes: 0, promise: nil)
    }

    package func finish(completed: Bool) {
        guard !completed else { return }
        guard let endWritten else { return reset() }
        endWritten.assumeIsolated().whenComplete { _ in self.reset() }
    }

    /// RST_STREAM: CANCEL when the exchange gave up the stream or the client stopped taking it,
    /// PROTOCOL_ERROR for a malformed request (RFC 9113 §8.1.1).
    private func reset(_ code: HTTP2ErrorCode = .cancel) {
        guard !isClosed else { return }
        connection.write(HTTP2Frame(streamID: id, payload: .rstStream(code)), promise: nil)
        connection.flushSoon()
    }

    /// Every write that flow control may hold up (DATA, and what is queued behind it) is followed to the
    /// socket: its bytes count against the watermarks until then, and writes that do not move for
    /// `idle_timeout` reset the stream. A response head is never held up, so it costs no promise.
    private func write(_ payload: HTTP2Frame.FramePayload, bytes: Int, promise: EventLoopPromise<Void>?) {
        guard !isClosed else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        if bytes == 0 && promise == nil {
            connection.write(HTTP2Frame(streamID: id, payload: payload), promise: nil)
            return
        }
        if flow.pendingWrites == 0 { lastWriteProgress = .now() }
        flow.writing(bytes)
        if !stallWatch {
            stallWatch = true
            connection.wake(at: lastWriteProgress + idleTimeout)
        }
        let written = promise ?? eventLoop.makePromise(of: Void.self)
        written.futureResult.assumeIsolated().whenComplete { _ in self.wrote(bytes) }
        connection.write(HTTP2Frame(streamID: id, payload: payload), promise: written)
    }

    private func wrote(_ bytes: Int) {
        lastWriteProgress = .now()
        if flow.wrote(bytes) && connection.isWritable { driver?.transportBecameWritable() }
    }

    package func connectionBecameWritable() {
        if flow.isUnderHighWatermark { driver?.transportBecameWritable() }
    }

    package func wake(at deadline: NIODeadline) {
        connection.wake(at: deadline)
    }

    /// The connection's timer fired: the exchange's deadline, and writes that have not moved for
    /// `idle_timeout` (a client that never opens its window): reset. Returns the next deadline ahead.
    package func deadlinePassed(now: NIODeadline) -> NIODeadline? {
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
