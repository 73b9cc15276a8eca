package import NIOCore
package import NIOHTTP2
package import GatehouseHTTP
import GatehouseTelemetry

/// The HTTP/2 front door, frame by frame: behind NIO's `NIOHTTP2Handler` (no stream multiplexer, so
/// no channel, pipeline or HTTP/1 parts per stream), it keeps Gatehouse's own stream table, hands each
/// stream's frames to its `HTTP2ServerStream` (and so to the request core), writes their answers as
/// frames, and sends the WINDOW_UPDATEs the multiplexer sent: the connection's as its bytes are read,
/// each stream's as its bytes are handed on. Streams opened in one read are answered with one flush.
package final class HTTP2ServerConnectionHandler: ChannelInboundHandler {
    package typealias InboundIn = HTTP2Frame
    package typealias OutboundOut = HTTP2Frame

    private let driverConnection: (ClientPeer) -> StreamDriver.Connection
    private let connectionGuard: HTTP2ConnectionGuard
    /// Streams NIO reported open, told to the guard and the manager.
    private var openStreams: HTTP2OpenStreams
    private let targetWindow: Int
    private let idleTimeout: TimeAmount
    private let maxHeaderBytes: Int
    private var streams: [HTTP2StreamID: HTTP2ServerStream] = [:]
    /// Streams that received frames in the current read.
    private var readStreams: [HTTP2ServerStream] = []
    private let output: HTTP2FrameOutput
    /// One timer for every stream's deadlines (response timeout, idle, stalled writes).
    private var timer = WakeTimer()
    private var context: ChannelHandlerContext?
    private var sharedConnection: StreamDriver.Connection?
    package let eventLoop: any EventLoop
    private(set) var allocator = ByteBufferAllocator()

    package init(
        eventLoop: any EventLoop, connectionGuard: HTTP2ConnectionGuard, manager: NIOHTTP2ServerConnectionManagementHandler.HTTP2StreamDelegate,
        targetWindow: Int, idleTimeout: TimeAmount, maxHeaderBytes: Int,
        driverConnection: @escaping (ClientPeer) -> StreamDriver.Connection
    ) {
        self.eventLoop = eventLoop
        self.openStreams = HTTP2OpenStreams(connectionGuard: connectionGuard, manager: manager)
        self.connectionGuard = connectionGuard
        self.targetWindow = targetWindow
        self.idleTimeout = idleTimeout
        self.maxHeaderBytes = maxHeaderBytes
        self.output = HTTP2FrameOutput(eventLoop: eventLoop, targetWindow: targetWindow)
        self.driverConnection = driverConnection
    }

    var isWritable: Bool { context?.channel.isWritable ?? false }

    package func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        output.attach(context)
        allocator = context.channel.allocator
        sharedConnection = driverConnection(ClientPeer(channel: context.channel))
    }

    package func handlerRemoved(context: ChannelHandlerContext) {
        timer.cancel()
        closeEveryStream()
        output.attach(nil)
        self.context = nil
    }

    package func channelInactive(context: ChannelHandlerContext) {
        closeEveryStream()
        context.fireChannelInactive()
    }

    private func closeEveryStream() {
        let open = streams.values
        streams.removeAll()
        for stream in open { stream.closed() }
    }

    // MARK: - Inbound

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        output.readBegan()
        let frame = unwrapInboundIn(data)
        guard frame.streamID != .rootStream else {
            context.fireChannelRead(data)  // PING acknowledgements: the manager's
            return
        }
        if let stream = streams[frame.streamID] {
            stream.received(frame.payload)
        } else if case .headers = frame.payload, connectionGuard.refusesNewStream(frame.streamID) {
            // After the GOAWAY that named an earlier stream: not processed, so the client may send it again elsewhere.
            output.write(HTTP2Frame(streamID: frame.streamID, payload: .rstStream(.refusedStream)), promise: nil)
            output.flushSoon()
        } else if case .headers = frame.payload, let shared = sharedConnection {
            let stream = HTTP2ServerStream(
                id: frame.streamID, connection: self, driverConnection: shared, targetWindow: targetWindow, idleTimeout: idleTimeout,
                maxHeaderBytes: maxHeaderBytes)
            streams[frame.streamID] = stream
            shared.handle.services.metrics.http2StreamOpened()
            stream.received(frame.payload)
        }
    }

    /// A stream received frames in this read: it hears of the read's end.
    package func streamRead(_ stream: HTTP2ServerStream) {
        if !readStreams.contains(where: { $0 === stream }) {
            readStreams.append(stream)
            stream.driver?.readBegan()
        }
    }

    package func channelReadComplete(context: ChannelHandlerContext) {
        let read = readStreams
        readStreams.removeAll(keepingCapacity: true)
        for stream in read { stream.readComplete() }
        output.readEnded()
        context.fireChannelReadComplete()
    }

    package func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // NIO's stream events end here (the manager hears of opens and closes from `openStreams`, and has no use
        // for windows).
        switch HTTP2StreamEvent(event) {
        case .windowUpdated(let window):
            if let (stream, size) = output.windowUpdated(window) { streams[stream]?.windowChanged(to: size) }
        case .created(let created):
            openStreams.opened(created.streamID, channel: context.channel)
        case .closed(let closed):
            if let stream = streams.removeValue(forKey: closed.streamID) { stream.closed() }
            openStreams.closed(closed.streamID, channel: context.channel)
        case .other:
            context.fireUserInboundEventTriggered(event)
        }
    }

    package func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            for stream in streams.values { stream.connectionBecameWritable() }
        }
        context.fireChannelWritabilityChanged()
    }

    /// NIO reports stream errors (a malformed frame: it resets that stream) and connection errors (it
    /// sends GOAWAY; HTTP2ConnectionGuard closes): nothing more to do here.
    package func errorCaught(context: ChannelHandlerContext, error: any Error) {}

    // MARK: - Outbound

    package func write(_ frame: HTTP2Frame, promise: EventLoopPromise<Void>?) {
        output.write(frame, promise: promise)
    }

    package func flushSoon() {
        output.flushSoon()
    }

    /// A stream has a deadline then: the connection's timer fires by then.
    package func wake(at deadline: NIODeadline) {
        timer.wake(at: deadline, on: eventLoop, owner: self) { $0.timerFired() }
    }

    private func timerFired() {
        timer.fired()
        let now = NIODeadline.now()
        var next: NIODeadline?
        for stream in Array(streams.values) {
            if let ahead = stream.deadlinePassed(now: now) { next = min(next ?? ahead, ahead) }
        }
        if let next { wake(at: next) }
    }

    package func sendWindowUpdate(_ stream: HTTP2StreamID, _ increment: Int) {
        output.sendWindowUpdate(stream, increment)
    }
}
