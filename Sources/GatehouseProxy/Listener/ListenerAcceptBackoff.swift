#if canImport(Glibc)
import Glibc
#endif
package import Logging
package import NIOCore
package import GatehouseTelemetry

/// What a listener does when `accept` fails for want of resources (EMFILE / ENFILE when the
/// descriptor table is full, ENOBUFS, ENOMEM): stop accepting for a moment instead of retrying in a
/// loop that keeps a core at 100%. Connections already open keep being served; every failure is
/// counted in `gatehouse_accept_errors_total`, and the operational log says so at most once per 10 s
/// (docs/reference.md §9, docs/security.md P54).
///
/// NIO's `AcceptBackoffHandler` (which the future-based `ServerBootstrap.bind` does not install anyway)
/// only delays the *next* `read()`; after a failed first accept the server channel still has a read
/// pending, stays registered for readability, and the kernel's non-empty accept queue wakes it again at
/// once. Turning `autoRead` off unregisters it; turning it on again after the pause resumes accepting.
package final class ListenerAcceptBackoff: ChannelInboundHandler, Sendable {
    package typealias InboundIn = any Channel
    package typealias InboundOut = any Channel

    /// How long accepting pauses after a failure: short enough that a freed descriptor is used soon,
    /// long enough that a full table costs a few attempts a second.
    static let pause = TimeAmount.milliseconds(250)

    private let listener: String
    private let metrics: GatehouseMetrics
    private let logger: Logger
    private let report = RateLimitedReport()

    package init(listener: String, metrics: GatehouseMetrics, logger: Logger) {
        self.listener = listener
        self.metrics = metrics
        self.logger = logger
    }

    package func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let ioError = error as? IOError, Self.isResourceShortage(ioError.errnoCode) else {
            context.fireErrorCaught(error)
            return
        }
        metrics.acceptError(listener: listener)
        report.occurred("accept failed; pausing new connections", metadata: [
            "gatehouse.listener": "\(listener)", "gatehouse.error": "\(ioError)",
            "gatehouse.pause_ms": "\(Self.pause.nanoseconds / 1_000_000)",
        ], to: logger)
        guard let options = context.channel.syncOptions, (try? options.getOption(.autoRead)) == true else { return }  // paused already
        try? options.setOption(.autoRead, value: false)
        let channel = context.channel
        context.eventLoop.scheduleTask(in: Self.pause) {
            if channel.isActive { try? channel.syncOptions?.setOption(.autoRead, value: true) }
        }
    }

    private static func isResourceShortage(_ code: CInt) -> Bool {
        code == EMFILE || code == ENFILE || code == ENOBUFS || code == ENOMEM
    }
}
