package import NIOCore
package import GatehouseHTTP

/// One HTTP/2 server connection (the client port's, the ext_authz port's), its bytes read and written by nghttp2
/// (`NGHTTP2Session`), each stream handed to what its port makes of it (`HTTP2ServerStreamHandling`: the request
/// core's driver on the client port, a Check on the ext_authz port). Around the codec, what Gatehouse adds:
/// swift-nio-http2's flood rules (`HTTP2FloodDefence`), its idle and graceful-stop GOAWAYs
/// (`HTTP2ConnectionLifecycle`), the stream windows opened only as their bytes are handed on, and one write and
/// one flush for everything the streams answered in one read.
package final class HTTP2ServerConnection: NGHTTP2ChannelHandler {
    package typealias InboundIn = ByteBuffer
    package typealias OutboundOut = ByteBuffer

    /// One stream as the codec sees it.
    final class Slot {
        let stream: any HTTP2ServerStreamHandling
        /// The answer's end was queued: another is refused.
        var endQueued = false

        init(stream: any HTTP2ServerStreamHandling) {
            self.stream = stream
        }
    }

    private let settings: Settings
    /// Given the channel once the connection is in the pipeline: what makes its streams.
    private let makeStreamMaker: (any Channel) -> HTTP2StreamMaker
    private var makeStream: HTTP2StreamMaker?
    package private(set) var session: NGHTTP2Session?
    private var defence: HTTP2FloodDefence
    private var lifecycle: HTTP2ConnectionLifecycle?
    private var slots: [Int32: Slot] = [:]
    /// Streams that received something in the current read.
    private var readStreams: [any HTTP2ServerStreamHandling] = []
    /// One timer for every stream's deadlines and the connection's own.
    private var timer = WakeTimer()
    package private(set) var context: ChannelHandlerContext?
    package private(set) var sessionLastStreamTaken: Int32 = 0
    package let eventLoop: any EventLoop
    package private(set) var allocator = ByteBufferAllocator()
    package let writeLedger = HTTP2WriteLedger()

    package struct Settings {
        package var idleTimeout: TimeAmount
        package var drainTimeout: TimeAmount
        package var maxHeaderBytes: Int
        package var maxConcurrentStreams: Int
        package var headerListCeiling: Int

        package init(idleTimeout: TimeAmount, drainTimeout: TimeAmount, maxHeaderBytes: Int, maxConcurrentStreams: Int, headerListCeiling: Int) {
            self.idleTimeout = idleTimeout
            self.drainTimeout = drainTimeout
            self.maxHeaderBytes = maxHeaderBytes
            self.maxConcurrentStreams = maxConcurrentStreams
            self.headerListCeiling = headerListCeiling
        }
    }

    package init(eventLoop: any EventLoop, settings: Settings, streams: @escaping (any Channel) -> HTTP2StreamMaker) {
        self.eventLoop = eventLoop
        self.settings = settings
        self.defence = HTTP2FloodDefence(headerListCeiling: settings.headerListCeiling)
        self.makeStreamMaker = streams
    }

    var isWritable: Bool { context?.channel.isWritable ?? false }

    package func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        allocator = context.channel.allocator
        makeStream = makeStreamMaker(context.channel)
        let session = NGHTTP2Session(
            server: true, delegate: self, eventLoop: eventLoop, allocator: allocator,
            maxBufferedControlFrames: HTTP2FloodDefence.maxBufferedControlFrames, headerListCeiling: settings.headerListCeiling)
        self.session = session
        session.submitSettings(
            [(NGHTTP2Session.Setting.maxHeaderListSize, UInt32(settings.headerListCeiling))],
            maxConcurrentStreams: UInt32(settings.maxConcurrentStreams))
        lifecycle = HTTP2ConnectionLifecycle(idleTimeout: settings.idleTimeout, drainTimeout: settings.drainTimeout, now: .now())
        armLifecycle()
        session.sendNow()
    }

    package func handlerRemoved(context: ChannelHandlerContext) {
        timer.cancel()
        closeEveryStream()
        session?.detach()
        self.context = nil
    }

    package func channelInactive(context: ChannelHandlerContext) {
        closeEveryStream()
        context.fireChannelInactive()
    }

    private func closeEveryStream() {
        let open = slots.values
        slots.removeAll()
        session?.dropQueuedBodies()
        for slot in open { closed(slot) }
    }

    private func closed(_ slot: Slot) {
        slot.stream.closed()
    }

    // MARK: - Inbound

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let session else { return }
        _ = session.receive(unwrapInboundIn(data))
    }

    /// A stream received something in this read: it hears of the read's end.
    func streamRead(_ stream: any HTTP2ServerStreamHandling) {
        if !readStreams.contains(where: { $0 === stream }) {
            readStreams.append(stream)
            stream.readBegan()
        }
    }

    package func channelReadComplete(context: ChannelHandlerContext) {
        let read = readStreams
        readStreams.removeAll(keepingCapacity: true)
        for stream in read { stream.readComplete() }
        session?.readEnded()
        // The pipeline's last handler: the tail does nothing with a read's end, so it goes no further.
    }

    package func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            for slot in slots.values { slot.stream.connectionBecameWritable() }
        }
        context.fireChannelWritabilityChanged()
    }

    package func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent {
            if let action = lifecycle?.stop(now: .now()) { run(action) }
        } else if case .inputClosed = event as? ChannelEvent {
            // HTTP/2 gives a half-closed connection no meaning: closed, not left half-open.
            context.close(promise: nil)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    package func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    // MARK: - The codec's reports

    package func sessionBeginsFrame(_ frame: NGHTTP2Session.FrameHeader) -> HTTP2ConnectionError? {
        if frame.type == NGHTTP2Session.FrameHeader.ping && frame.flags & NGHTTP2Session.FrameHeader.ack != 0 {
            if let action = lifecycle?.pingAcknowledged() { run(action) }
        }
        return defence.frameBegins(frame, now: NIODeadline.now())
    }

    package func sessionBeginsBlock(of stream: Int32, opensStream: Bool) {
        guard opensStream, let makeStream else { return }
        guard slots.count < settings.maxConcurrentStreams else {
            // Past SETTINGS_MAX_CONCURRENT_STREAMS: refused on its own stream, its block decoded for HPACK's sake only.
            session?.submitReset(stream, code: HTTP2ConnectionError.refusedStream)
            return
        }
        slots[stream] = Slot(stream: makeStream(self, stream))
        streamsChanged()
    }

    package func sessionEndedBlock(of stream: Int32, fields: consuming HTTP2FieldList, endStream: Bool) -> HTTP2ConnectionError? {
        guard let slot = slots[stream] else { return nil }
        sessionLastStreamTaken = max(sessionLastStreamTaken, stream)
        slot.stream.received(.fields(consume fields, endStream: endStream))
        return nil
    }

    /// A stream was reset for a fault of the client's (a body that does not match its `content-length`): past
    /// the flood rules' count, the connection ends.
    func streamErred() {
        if let refused = defence.streamError(now: .now()) { session?.terminate(refused) }
    }

    package func sessionReceivedData(of stream: Int32, _ bytes: ByteBuffer) {
        guard let slot = slots[stream] else {
            session?.consume(stream, bytes: bytes.readableBytes)  // a stream already done: nobody holds its bytes
            return
        }
        slot.stream.received(.data(bytes, endStream: false))
    }

    package func sessionEndedData(of stream: Int32, payloadBytes: Int, endStream: Bool) -> HTTP2ConnectionError? {
        if let refused = defence.dataFrameEnded(payloadBytes: payloadBytes, endStream: endStream) { return refused }
        if endStream { slots[stream]?.stream.received(.data(allocator.buffer(capacity: 0), endStream: true)) }
        return nil
    }

    package func sessionRefusedFrame(of stream: Int32) -> HTTP2ConnectionError? {
        defence.streamError(now: .now())
    }

    package func sessionClosed(stream: Int32, errorCode: UInt32) {
        guard let slot = slots.removeValue(forKey: stream) else { return }
        closed(slot)
        streamsChanged()
    }

    package func sessionSentEnd(of stream: Int32) {
        slots[stream]?.stream.endWentOut()
    }

    package func sessionWrote(_ credit: HTTP2WriteCredit) {
        slots[credit.stream]?.stream.wrote(credit.bytes)
    }

    // MARK: - What the streams send

    package func respond(_ stream: Int32, _ fields: [NGHTTP2Session.OutboundField], hasBody: Bool) {
        session?.submitResponse(stream, fields, hasBody: hasBody)
    }

    /// Body bytes of `stream`; when `counted`, the stream hears of them again (`wrote`) once they are on the socket
    /// (a Check's answer, one small message, is not counted).
    package func queue(_ stream: Int32, _ bytes: ByteBuffer, counted: Bool = true) {
        let completion: HTTP2WriteCompletion = counted ? .credit(HTTP2WriteCredit(stream: stream, bytes: bytes.readableBytes)) : .none
        session?.queue(stream, bytes, completion: completion)
    }

    /// The body ends after what is queued, with trailers if any; the stream hears of it (`endWentOut`) once the end
    /// has gone out.
    package func queueEnd(_ stream: Int32, trailers: HTTP2FieldList?) {
        guard let slot = slots[stream], !slot.endQueued else { return }
        slot.endQueued = true
        session?.endBody(stream, trailers: trailers)
    }

    package func reset(_ stream: Int32, code: UInt32) {
        session?.submitReset(stream, code: code)
    }

    /// The stream handed `bytes` of its DATA on: its window opens by them.
    package func consumed(_ stream: Int32, bytes: Int) {
        session?.consume(stream, bytes: bytes)
    }

    /// Sends at the end of the current read, or once at the end of this event-loop turn.
    package func flushSoon() {
        session?.sendSoon()
    }


    // MARK: - Time

    package func wake(at deadline: NIODeadline) {
        timer.wake(at: deadline, on: eventLoop, owner: self) { $0.timerFired() }
    }

    private func timerFired() {
        timer.fired()
        let now = NIODeadline.now()
        var next: NIODeadline?
        for slot in Array(slots.values) {
            if let ahead = slot.stream.deadlinePassed(now: now) { next = min(next ?? ahead, ahead) }
        }
        if let next { wake(at: next) }
        if let action = lifecycle?.timePassed(now: now) { run(action) }
        armLifecycle()
    }

    private func streamsChanged() {
        lifecycle?.streamsChanged(open: slots.count, now: NIODeadline.now())
        armLifecycle()
    }

    private func armLifecycle() {
        if let deadline = lifecycle?.nextDeadline { wake(at: deadline) }
    }

    private func run(_ action: HTTP2ConnectionLifecycle.Action) {
        switch action {
        case .announceGoingAway:
            session?.submitShutdownNotice()
            session?.submitPing(0x6761_7465_686f_7573)  // "gatehous"
        case .goAway:
            session?.submitGoAway()
        case .close:
            context?.close(promise: nil)
            return
        }
        armLifecycle()
        flushSoon()
    }
}
