package import NIOCore
package import GatehouseHTTP
package import GatehouseExchange

/// One multiplexed HTTP/2 connection to the upstream, its bytes read and written by nghttp2 (`NGHTTP2Session`,
/// client side): a new leg becomes a stream when it sends its head, its response goes to it, its body to the codec.
/// Watches the upstream's SETTINGS and GOAWAY, counts the legs on it, and opens each stream's window only as its
/// leg hands the bytes on (the client's pace reaches the upstream). swift-nio-http2's flood rules apply as on the
/// client port, but for the RST_STREAM count: an upstream resets every stream it answered before reading its body
/// (nginx answering a gRPC call), which is not a flood.
package final class HTTP2UpstreamConnection: NGHTTP2ChannelHandler {
    package typealias InboundIn = ByteBuffer
    package typealias OutboundOut = ByteBuffer

    /// What one response block may take, encoded or decoded.
    package static let headerListCeiling = 64 << 10
    /// Client stream ids are odd and end at 2^31 - 1: a connection near the end takes no new streams.
    private static let lastStreamID = Int32.max - 2

    package let channel: any Channel
    package let scheme: String
    package weak var pool: HTTP2UpstreamPool?
    package private(set) var context: ChannelHandlerContext?
    package private(set) var session: NGHTTP2Session?
    package let writeLedger = HTTP2WriteLedger()
    private var defence = HTTP2FloodDefence(headerListCeiling: HTTP2UpstreamConnection.headerListCeiling, countsResets: false)
    /// Each open stream's leg.
    private var legs: [Int32: HTTP2UpstreamLeg] = [:]
    /// Legs handed out that have not sent their head yet (no stream id until then).
    private var unstartedLegs = 0
    private var readLegs: [HTTP2UpstreamLeg] = []
    private var isGoingAway = false
    package private(set) var sessionLastStreamTaken: Int32 = 0

    /// Succeeds once the connection is active and its preface is written: no stream may open before. (Bound to the
    /// connection's loop: the handler is not Sendable, the future's value must be.)
    let activated: EventLoopPromise<NIOLoopBound<HTTP2UpstreamConnection>>

    init(channel: any Channel, isTLS: Bool) {
        self.channel = channel
        self.scheme = isTLS ? "https" : "http"
        self.activated = channel.eventLoop.makePromise()
    }

    var eventLoop: any EventLoop { channel.eventLoop }
    var allocator: ByteBufferAllocator { channel.allocator }
    var isWritable: Bool { channel.isWritable }
    var hasRoom: Bool {
        guard channel.isActive, !isGoingAway, let session else { return false }
        return legs.count + unstartedLegs < session.peerMaxConcurrentStreams && session.nextStreamID <= Self.lastStreamID
    }

    package func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { start(context) }
    }

    package func channelActive(context: ChannelHandlerContext) {
        context.fireChannelActive()
        start(context)
    }

    private func start(_ context: ChannelHandlerContext) {
        guard session == nil else { return }
        let session = NGHTTP2Session(
            server: false, delegate: self, eventLoop: context.eventLoop, allocator: context.channel.allocator,
            maxBufferedControlFrames: HTTP2FloodDefence.maxBufferedControlFrames, headerListCeiling: Self.headerListCeiling)
        self.session = session
        session.submitSettings([(NGHTTP2Session.Setting.enablePush, 0)], maxConcurrentStreams: nil)
        session.sendNow()
        activated.succeed(NIOLoopBound(self, eventLoop: context.eventLoop))
    }

    package func handlerRemoved(context: ChannelHandlerContext) {
        activated.fail(ChannelError.ioOnClosedChannel)
        failEveryLeg()
        session?.detach()
        self.context = nil
    }

    /// A leg for a new stream; the stream opens with the leg's head (`submitRequest`).
    func openStream() -> HTTP2UpstreamLeg {
        unstartedLegs += 1
        return HTTP2UpstreamLeg(connection: self)
    }

    /// A leg given up before it sent its head.
    func discard(_ leg: HTTP2UpstreamLeg) {
        unstartedLegs -= 1
        closeIfGoneAway()
    }

    private func closeIfGoneAway() {
        if isGoingAway && legs.isEmpty && unstartedLegs == 0 { channel.close(promise: nil) }
    }

    // MARK: - Inbound

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if session?.receive(unwrapInboundIn(data)) != nil { leave() }
    }

    package func channelReadComplete(context: ChannelHandlerContext) {
        let read = readLegs
        readLegs.removeAll(keepingCapacity: true)
        for leg in read { leg.readComplete() }
        session?.readEnded()
        // The pipeline's last handler: the tail does nothing with a read's end, so it goes no further.
    }

    package func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            for leg in legs.values { leg.connectionBecameWritable() }
        }
        context.fireChannelWritabilityChanged()
    }

    package func channelInactive(context: ChannelHandlerContext) {
        activated.fail(ChannelError.ioOnClosedChannel)
        pool?.connectionClosed(self)
        failEveryLeg()
        context.fireChannelInactive()
    }

    package func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    private func failEveryLeg() {
        let open = legs.values
        legs.removeAll()
        session?.dropQueuedBodies()
        for leg in open { leg.closed(refused: false) }
    }

    /// No new stream goes on this connection: it leaves the pool, and closes once its streams are done.
    private func leave() {
        guard !isGoingAway else { return }
        isGoingAway = true
        pool?.connectionClosed(self)
    }

    // MARK: - The codec's reports

    package func sessionBeginsFrame(_ frame: NGHTTP2Session.FrameHeader) -> HTTP2ConnectionError? {
        // Streams the upstream never processed are refused (and retried by their exchanges); new ones go elsewhere.
        if frame.type == NGHTTP2Session.FrameHeader.goAway { leave() }
        return defence.frameBegins(frame, now: NIODeadline.now())
    }

    package func sessionBeginsBlock(of stream: Int32, opensStream: Bool) {}

    package func sessionEndedBlock(of stream: Int32, fields: consuming HTTP2FieldList, endStream: Bool) -> HTTP2ConnectionError? {
        guard let leg = legs[stream] else { return nil }
        legRead(leg)
        leg.received(.fields(consume fields, endStream: endStream))
        return nil
    }

    package func sessionReceivedData(of stream: Int32, _ bytes: ByteBuffer) {
        guard let leg = legs[stream] else {
            session?.consume(stream, bytes: bytes.readableBytes)
            return
        }
        legRead(leg)
        leg.received(.data(bytes, endStream: false))
    }

    package func sessionEndedData(of stream: Int32, payloadBytes: Int, endStream: Bool) -> HTTP2ConnectionError? {
        if let refused = defence.dataFrameEnded(payloadBytes: payloadBytes, endStream: endStream) { return refused }
        if endStream, let leg = legs[stream] {
            legRead(leg)
            leg.received(.data(allocator.buffer(capacity: 0), endStream: true))
        }
        return nil
    }

    private func legRead(_ leg: HTTP2UpstreamLeg) {
        if !readLegs.contains(where: { $0 === leg }) { readLegs.append(leg) }
    }

    package func sessionRefusedFrame(of stream: Int32) -> HTTP2ConnectionError? {
        defence.streamError(now: .now())
    }

    package func sessionClosed(stream: Int32, errorCode: UInt32) {
        guard let leg = legs.removeValue(forKey: stream) else { return }
        leg.closed(refused: errorCode == HTTP2ConnectionError.refusedStream)
        closeIfGoneAway()
    }

    package func sessionSentEnd(of stream: Int32) {}

    package func sessionWrote(_ credit: HTTP2WriteCredit) {
        legs[credit.stream]?.wrote(credit.bytes)
    }

    // MARK: - What the legs send

    /// The leg's head: its stream opens now. Nil when the codec took no stream (the connection is ending).
    package func submitRequest(_ leg: HTTP2UpstreamLeg, _ head: HTTP2UpstreamHead, hasBody: Bool) -> Int32? {
        unstartedLegs -= 1
        guard let session, let stream = session.submitRequest(head.fields, then: head.identityFields, last: head.signedFields, hasBody: hasBody) else {
            closeIfGoneAway()
            return nil
        }
        legs[stream] = leg
        sessionLastStreamTaken = stream
        return stream
    }

    /// Body bytes of `stream`; its leg hears of them again (`wrote`) once they are on the socket.
    package func queue(_ stream: Int32, _ bytes: ByteBuffer) {
        session?.queue(stream, bytes, completion: .credit(HTTP2WriteCredit(stream: stream, bytes: bytes.readableBytes)))
    }

    package func queueEnd(_ stream: Int32, trailers: HTTP2FieldList?) {
        session?.endBody(stream, trailers: trailers)
    }

    package func reset(_ stream: Int32, code: UInt32) {
        session?.submitReset(stream, code: code)
        flushSoon()
    }

    /// The leg handed `bytes` of the response on: the stream's window opens by them.
    package func consumed(_ stream: Int32, bytes: Int) {
        session?.consume(stream, bytes: bytes)
    }

    /// Sends at the end of the current read, or once at the end of this event-loop turn.
    package func flushSoon() {
        session?.sendSoon()
    }

}
