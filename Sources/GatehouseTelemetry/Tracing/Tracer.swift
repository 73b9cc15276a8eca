package import Foundation
package import NIOCore
package import NIOHTTP1
package import GatehouseConfig
package import GatehouseVocabulary

/// Starts the trace of each request (docs/reference.md §16): continues a caller's W3C `traceparent`, samples the
/// traces it starts by `sampling_ratio` on the trace id (as OpenTelemetry's TraceIdRatioBased does), and hands
/// finished spans to the exporter. One per process; a reload keeps it.
package final class Tracer: Sendable {
    package let settings: TracingSettings
    package let exporter: SpanExporter
    let ids = TraceIDs()
    /// Trace ids whose low 53 bits fall under this are sampled.
    private let threshold: UInt64
    /// `server.address`, `server.port`, `url.scheme` of `[upstream] url`: encoded once, the start of every upstream span's
    /// attributes.
    let upstreamAttributes: SpanAttributes

    package init(settings: TracingSettings, exporter: SpanExporter, upstream url: URL? = nil) {
        self.settings = settings
        self.exporter = exporter
        var upstream: [(String, TraceSpan.Value)] = []
        if let url, let host = url.host {
            let scheme = url.scheme?.lowercased() ?? "http"
            upstream = [
                ("server.address", .string(host)), ("server.port", .int(Int64(url.port ?? (scheme == "https" ? 443 : 80)))),
                ("url.scheme", .string(scheme)),
            ]
        }
        upstreamAttributes = SpanAttributes(upstream)
        threshold = UInt64(max(0, min(1, settings.samplingRatio)) * Double(UInt64(1) << 53))
    }

    /// The trace of a request whose head arrived at `start`: its context and span ids always (the upstream is told
    /// of the trace even when it is not sampled), and a recorder of its spans only when it is sampled, confined to
    /// `eventLoop`, the request's.
    package func begin(_ head: HTTPRequestHead, start: NIODeadline, clientIP: String, clientVersion: HTTPVersion?, on eventLoop: any EventLoop)
        -> TraceStart {
        var context = TraceContext.of(
            traceParent: head.headers.first(name: "traceparent"), traceState: head.headers.first(name: "tracestate"), ids: ids,
            sampleRoot: { [threshold] low in low & ((UInt64(1) << 53) - 1) < threshold })
        if !settings.followsParent, context.parentSpanID != nil {
            context = TraceContext(traceIDHigh: context.traceIDHigh, traceIDLow: context.traceIDLow, parentSpanID: context.parentSpanID,
                                   sampled: context.traceIDLow & ((UInt64(1) << 53) - 1) < threshold, traceState: context.traceState)
        }
        let serverSpanID = ids.spanID()
        let upstreamSpanID = ids.spanID()
        guard context.sampled else {
            return TraceStart(context: context, serverSpanID: serverSpanID, upstreamSpanID: upstreamSpanID, recorder: nil)
        }
        let request = ServerSpanRequest(
            method: head.method.rawValue, target: head.uri, clientIP: clientIP,
            protocolVersion: clientVersion.map { $0.minor == 0 ? "1.0" : "1.1" } ?? "2", host: head.headers.first(name: "host"),
            userAgent: head.headers.first(name: "user-agent"))
        let recorder = RequestTrace(
            context: context, serverSpanID: serverSpanID, upstreamSpanID: upstreamSpanID, tracer: self, request: request, start: start,
            wallNanos: Self.wallClockNanos(), on: eventLoop)
        return TraceStart(context: context, serverSpanID: serverSpanID, upstreamSpanID: upstreamSpanID, recorder: recorder)
    }

    /// Unix time in nanoseconds, exact (a `Date` keeps about a quarter of a microsecond of it).
    static func wallClockNanos() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
    }
}

/// A request's trace as it starts: what is propagated, and the recorder of its spans when it is sampled.
package struct TraceStart {
    package let context: TraceContext
    let serverSpanID: UInt64
    let upstreamSpanID: UInt64
    /// Nil when the trace is not sampled: nothing is recorded, the context is still passed on.
    package let recorder: RequestTrace?

    /// What the upstream is sent: the upstream call's span as the parent.
    package var upstreamPropagation: TracePropagation {
        TracePropagation(traceParent: context.traceParent(spanID: upstreamSpanID), traceState: context.traceState)
    }

    /// What a Check's allow sets on the request (no upstream call of Gatehouse's own): the server span as the parent.
    package var checkPropagation: TracePropagation {
        TracePropagation(traceParent: context.traceParent(spanID: serverSpanID), traceState: context.traceState)
    }
}
