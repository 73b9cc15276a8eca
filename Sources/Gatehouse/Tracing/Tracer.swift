import Foundation
import NIOCore
import NIOHTTP1

/// Starts the trace of each request (docs/reference.md §16): continues a caller's W3C `traceparent`, samples the
/// traces it starts by `sampling_ratio` on the trace id (as OpenTelemetry's TraceIdRatioBased does), and hands
/// finished spans to the exporter. One per process; a reload keeps it.
final class Tracer: Sendable {
    let settings: TracingSettings
    let exporter: SpanExporter
    private let ids = TraceIDs()
    /// Trace ids whose low 53 bits fall under this are sampled.
    private let threshold: UInt64

    /// `server.address`, `server.port`, `url.scheme` of `[upstream] url`.
    private let upstream: SpanAttributes

    init(settings: TracingSettings, exporter: SpanExporter, upstream url: URL? = nil) {
        self.settings = settings
        self.exporter = exporter
        var upstream = SpanAttributes()
        if let url, let host = url.host {
            let scheme = url.scheme?.lowercased() ?? "http"
            upstream = SpanAttributes([
                ("server.address", .string(host)), ("server.port", .int(Int64(url.port ?? (scheme == "https" ? 443 : 80)))),
                ("url.scheme", .string(scheme)),
            ])
        }
        self.upstream = upstream  // encoded once: every upstream span starts with these bytes
        threshold = UInt64(max(0, min(1, settings.samplingRatio)) * Double(UInt64(1) << 53))
    }

    /// The trace of a request whose head arrived at `start`: its context and span ids always (the upstream is told
    /// of the trace even when it is not sampled), and a recorder of its spans only when it is sampled.
    func begin(_ head: HTTPRequestHead, start: NIODeadline, clientIP: String, clientVersion: HTTPVersion?) -> TraceStart {
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
        // What the OpenTelemetry HTTP server conventions name; never the query, a token, a cookie or a proof.
        let path = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? head.uri
        var attributes = SpanAttributes(reservingCapacity: 512)
        attributes.add("http.request.method", .string(head.method.rawValue))
        attributes.add("url.path", .string(path))
        attributes.add("client.address", .string(clientIP))
        attributes.add("network.protocol.version", .string(clientVersion.map { $0.minor == 0 ? "1.0" : "1.1" } ?? "2"))
        if let host = head.headers.first(name: "host") {
            let (name, port) = Self.split(host)
            attributes.add("server.address", .string(name))
            if let port { attributes.add("server.port", .int(port)) }
        }
        if let agent = head.headers.first(name: "user-agent") { attributes.add("user_agent.original", .string(agent)) }
        let recorder = RequestTrace(
            context: context, serverSpanID: serverSpanID, upstreamSpanID: upstreamSpanID, ids: ids, exporter: exporter, start: start,
            wallNanos: UInt64(Date().timeIntervalSince1970 * 1e9), name: head.method.rawValue, attributes: attributes)
        return TraceStart(context: context, serverSpanID: serverSpanID, upstreamSpanID: upstreamSpanID, recorder: recorder)
    }

    /// The upstream call's client-span attributes: the upstream's address, the method, the path (never the query).
    func upstreamAttributes(_ request: UpstreamRequestHead.Request) -> SpanAttributes {
        var attributes = SpanAttributes(reservingCapacity: 256)
        attributes.add(upstream)
        attributes.add("http.request.method", .string(request.head.method.rawValue))
        attributes.add("url.path", .string(request.target.path))
        return attributes
    }

    /// `host[:port]`, `[v6]:port`.
    static func split(_ authority: String) -> (String, Int64?) {
        guard let colon = authority.lastIndex(of: ":"), !authority.hasSuffix("]") else { return (authority, nil) }
        let port = Int64(authority[authority.index(after: colon)...])
        return port == nil ? (authority, nil) : (String(authority[..<colon]), port)
    }
}

/// A request's trace as it starts: what is propagated, and the recorder of its spans when it is sampled.
struct TraceStart {
    let context: TraceContext
    let serverSpanID: UInt64
    let upstreamSpanID: UInt64
    /// Nil when the trace is not sampled: nothing is recorded, the context is still passed on.
    let recorder: RequestTrace?

    /// What the upstream is sent: the upstream call's span as the parent.
    var upstreamPropagation: TracePropagation {
        TracePropagation(traceParent: context.traceParent(spanID: upstreamSpanID), traceState: context.traceState)
    }

    /// What a Check's allow sets on the request (no upstream call of Gatehouse's own): the server span as the parent.
    var checkPropagation: TracePropagation {
        TracePropagation(traceParent: context.traceParent(spanID: serverSpanID), traceState: context.traceState)
    }
}
