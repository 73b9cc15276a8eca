package import NIOCore
package import NIOHTTP2
import GatehouseHTTP

/// One multiplexed HTTP/2 connection to the upstream, frame by frame behind NIO's `NIOHTTP2Handler`
/// (no stream multiplexer): a new leg is a new stream id in Gatehouse's own table, its frames go to
/// it and its writes to the connection. Watches the upstream's SETTINGS and GOAWAY, counts the
/// streams open on it, and sends the WINDOW_UPDATEs for what the legs have read.
package final class HTTP2UpstreamConnection: ChannelInboundHandler {
    package typealias InboundIn = HTTP2Frame
    package typealias OutboundOut = HTTP2Frame

    /// Each stream's and the connection's receive window.
    package static let targetWindow = 65535
    /// Client stream ids are odd and end at 2^31 - 1: a connection near the end takes no new streams.
    private static let lastStreamID = Int(Int32.max) - 2

    package let channel: any Channel
    package let scheme: String
    package weak var pool: HTTP2UpstreamPool?
    private var context: ChannelHandlerContext?
    private var legs: [HTTP2StreamID: HTTP2UpstreamLeg] = [:]
    private var readLegs: [HTTP2UpstreamLeg] = []
    private let output: HTTP2FrameOutput
    private var nextStreamID = 1
    /// Until the upstream's first SETTINGS says otherwise (RFC 9113 §6.5.2: unlimited; 100 is
    /// what most servers announce).
    private var maxConcurrentStreams = 100
    private var isGoingAway = false

    /// Succeeds once the connection is active and NIO has written the preface: no stream may open before. (Bound to
    /// the connection's loop: the handler is not Sendable, the future's value must be.)
    package let activated: EventLoopPromise<NIOLoopBound<HTTP2UpstreamConnection>>

    package init(channel: any Channel, isTLS: Bool) {
        self.channel = channel
        self.scheme = isTLS ? "https" : "http"
        self.activated = channel.eventLoop.makePromise()
        self.output = HTTP2FrameOutput(eventLoop: channel.eventLoop, targetWindow: Self.targetWindow)
    }

    var eventLoop: any EventLoop { channel.eventLoop }
    var allocator: ByteBufferAllocator { channel.allocator }
    var isWritable: Bool { channel.isWritable }
    package var hasRoom: Bool {
        channel.isActive && !isGoingAway && legs.count < maxConcurrentStreams && nextStreamID <= Self.lastStreamID
    }

    package func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        output.attach(context)
        if context.channel.isActive { activated.succeed(NIOLoopBound(self, eventLoop: context.eventLoop)) }
    }

    package func channelActive(context: ChannelHandlerContext) {
        context.fireChannelActive()
        activated.succeed(NIOLoopBound(self, eventLoop: context.eventLoop))
    }

    package func handlerRemoved(context: ChannelHandlerContext) {
        activated.fail(ChannelError.ioOnClosedChannel)
        failEveryLeg()
        output.attach(nil)
        self.context = nil
    }

    /// A leg on a new stream; the stream opens with the leg's first write (its HEADERS).
    package func openStream(_ completion: HTTP2UpstreamPool.Completion) {
        let id = HTTP2StreamID(nextStreamID)
        nextStreamID += 2
        let leg = HTTP2UpstreamLeg(id: id, connection: self, targetWindow: Self.targetWindow)
        legs[id] = leg
        completion(.success(leg))
    }

    /// A leg given up before its first write: its stream id is skipped (RFC 9113 §5.1.1).
    package func discard(_ leg: HTTP2UpstreamLeg) {
        legs.removeValue(forKey: leg.id)
        if isGoingAway && legs.isEmpty { channel.close(promise: nil) }
    }

    // MARK: - Inbound

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        output.readBegan()
        let frame = unwrapInboundIn(data)
        if frame.streamID != .rootStream {
            guard let leg = legs[frame.streamID] else { return }
            if !readLegs.contains(where: { $0 === leg }) { readLegs.append(leg) }
            leg.received(frame.payload)
            return
        }
        switch frame.payload {
        case .settings(.settings(let settings)):
            for setting in settings where setting.parameter == .maxConcurrentStreams {
                maxConcurrentStreams = setting.value
            }
        case .goAway:
            // Streams the upstream never processed are refused (and retried by their exchanges);
            // new ones go to another connection.
            isGoingAway = true
            pool?.connectionClosed(self)
        default:
            break
        }
    }

    package func channelReadComplete(context: ChannelHandlerContext) {
        let read = readLegs
        readLegs.removeAll(keepingCapacity: true)
        for leg in read { leg.readComplete() }
        output.readEnded()
        context.fireChannelReadComplete()
    }

    package func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch HTTP2StreamEvent(event) {
        case .closed(let closed):
            if let leg = legs.removeValue(forKey: closed.streamID) { leg.closed(refused: closed.reason == .refusedStream) }
            if isGoingAway && legs.isEmpty { context.close(promise: nil) }
        case .windowUpdated(let window):
            if let (stream, size) = output.windowUpdated(window) { legs[stream]?.windowChanged(to: size) }
        case .created, .other:
            break
        }
        context.fireUserInboundEventTriggered(event)
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
        // A stream error resets that stream only (NIO reports its close); anything else ends the connection.
        if error is NIOHTTP2Errors.StreamError { return }
        context.close(promise: nil)
    }

    private func failEveryLeg() {
        let open = legs.values
        legs.removeAll()
        for leg in open { leg.closed(refused: false) }
    }

    // MARK: - Outbound

    package func write(_ frame: HTTP2Frame, promise: EventLoopPromise<Void>?) {
        output.write(frame, promise: promise)
    }

    package func flushSoon() {
        output.flushSoon()
    }

    package func sendWindowUpdate(_ stream: HTTP2StreamID, _ increment: Int) {
        output.sendWindowUpdate(stream, increment)
    }
}
