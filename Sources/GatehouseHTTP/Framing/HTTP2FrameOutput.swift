public import NIOCore
public import NIOHTTP2

/// What both of Gatehouse's frame-level HTTP/2 connections (a client's, `HTTP2ServerConnectionHandler`;
/// one to the upstream, `HTTP2UpstreamConnection`) do alike on their way out: write their streams'
/// frames, flush once per read or per event-loop turn (the answers of every stream completed in one
/// read of the other side go out together), and keep the connection's receive window topped up.
public final class HTTP2FrameOutput {
    public let eventLoop: any EventLoop
    private var context: ChannelHandlerContext?
    private var connectionWindow: InboundFlowWindow
    private var isReading = false
    private var flushPending = false

    public init(eventLoop: any EventLoop, targetWindow: Int) {
        self.eventLoop = eventLoop
        self.connectionWindow = InboundFlowWindow(target: targetWindow)
    }

    /// The connection's handler context while it is in the pipeline (nil once removed).
    public func attach(_ context: ChannelHandlerContext?) {
        self.context = context
    }

    public func write(_ frame: HTTP2Frame, promise: EventLoopPromise<Void>?) {
        guard let context else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        context.write(NIOAny(frame), promise: promise)
    }

    /// Flushes at the end of the current read, or once at the end of this event-loop turn.
    public func flushSoon() {
        guard !flushPending else { return }
        flushPending = true
        if !isReading {
            eventLoop.assumeIsolated().execute {
                guard self.flushPending else { return }
                self.flushPending = false
                self.context?.flush()
            }
        }
    }

    public func readBegan() {
        isReading = true
    }

    /// The connection's read is over: what its streams wrote meanwhile goes out.
    public func readEnded() {
        isReading = false
        if flushPending {
            flushPending = false
            context?.flush()
        }
    }

    public func sendWindowUpdate(_ stream: HTTP2StreamID, _ increment: Int) {
        write(HTTP2Frame(streamID: stream, payload: .windowUpdate(windowSizeIncrement: increment)), promise: nil)
        flushSoon()
    }

    /// NIO's report of a receive window: the connection's is topped up here; a stream's is handed back.
    public func windowUpdated(_ event: NIOHTTP2WindowUpdatedEvent) -> (stream: HTTP2StreamID, size: Int)? {
        guard let size = event.inboundWindowSize else { return nil }
        guard event.streamID == .rootStream else { return (event.streamID, size) }
        if let increment = connectionWindow.windowChanged(to: size) { sendWindowUpdate(.rootStream, increment) }
        return nil
    }
}
