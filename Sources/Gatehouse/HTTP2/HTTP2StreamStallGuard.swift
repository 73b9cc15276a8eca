import NIOCore
import NIOHTTP2

/// Resets an HTTP/2 stream whose writes have not moved for `idle_timeout`: a client that never
/// opens its flow-control window (SETTINGS_INITIAL_WINDOW_SIZE 0, no WINDOW_UPDATE) would
/// otherwise hold the stream, and what waits to be sent on it, for ever once the upstream has
/// answered whole (the stream handler's watchdog is over by then). First in the stream pipeline,
/// it sees the frames as they leave; a write completes when NIO hands it to the socket.
final class HTTP2StreamStallGuard: ChannelOutboundHandler {
    typealias OutboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    private let idleTimeout: TimeAmount
    private var pendingWrites = 0
    private var lastProgress = NIODeadline.now()
    private var check: Scheduled<Void>?

    init(idleTimeout: TimeAmount) {
        self.idleTimeout = idleTimeout
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        check?.cancel()
        check = nil
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if pendingWrites == 0 { lastProgress = .now() }
        pendingWrites += 1
        let written = promise ?? context.eventLoop.makePromise(of: Void.self)
        written.futureResult.assumeIsolated().whenComplete { _ in
            self.pendingWrites -= 1
            self.lastProgress = .now()
        }
        context.write(data, promise: written)
        if check == nil { schedule(in: idleTimeout, context: context) }
    }

    private func schedule(in delay: TimeAmount, context: ChannelHandlerContext) {
        check = context.eventLoop.assumeIsolated().scheduleTask(in: delay) {
            self.check = nil
            guard self.pendingWrites > 0 else { return }
            let idle = NIODeadline.now() - self.lastProgress
            if idle >= self.idleTimeout {
                context.close(promise: nil)  // RST_STREAM (CANCEL); the stream handler finishes the upstream leg
            } else {
                self.schedule(in: self.idleTimeout - idle, context: context)
            }
        }
    }
}
