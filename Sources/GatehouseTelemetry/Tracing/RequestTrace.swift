package import NIOCore
import NIOHTTP1
import GatehouseSyntax
package import GatehouseVocabulary

/// The spans of one request (docs/reference.md §16): its server span, the span of its verification, of what the
/// decision waited on (`TraceScope`), and of the upstream call. Made for sampled traces only (`TraceStart`).
///
/// Cheap by construction, as every sampled request pays for it: what a span says is kept as the request gave it, and
/// the request's spans are encoded once, together, when the server span ends (`finish`), then handed to the
/// exporter. Times are taken on the monotonic clock and placed on the wall clock read once, at the request's start.
///
/// Confined to the request's event loop, so it takes no lock: its door (`StreamDriver`, `CheckDriver`) is, and so
/// are the upstream leg's callbacks. A wait's span may end on another event loop (an HTTP client's): it reads only
/// the constants and goes to the exporter on its own (`child`).
public final class RequestTrace: @unchecked Sendable {
    package let context: TraceContext
    let serverSpanID: UInt64
    /// The upstream call's span, chosen up front: its id is the parent in the `traceparent` the upstream gets.
    let upstreamSpanID: UInt64
    private let tracer: Tracer
    private let startWallNanos: UInt64
    private let start: NIODeadline
    private let request: ServerSpanRequest
    private let eventLoop: any EventLoop

    // The request's event loop only.
    private var finished = false
    private var via: String?
    private var routeAuth: String?
    private var refusal: (reason: String, provider: String?)?
    private var verification: (cache: String, provider: String)?
    /// The verification span's times: from the request's head to its decision.
    private var verifyTimes: (from: UInt64, to: UInt64)?
    private var upstream: UpstreamCall?

    /// The upstream call: the client span.
    private struct UpstreamCall {
        let start: NIODeadline
        let method: String
        let path: String
        var end: (at: NIODeadline, status: Int?, error: String?)?
    }

    package init(context: TraceContext, serverSpanID: UInt64, upstreamSpanID: UInt64, tracer: Tracer, request: ServerSpanRequest,
         start: NIODeadline, wallNanos: UInt64, on eventLoop: any EventLoop) {
        self.context = context
        self.serverSpanID = serverSpanID
        self.upstreamSpanID = upstreamSpanID
        self.tracer = tracer
        self.request = request
        self.start = start
        startWallNanos = wallNanos
        self.eventLoop = eventLoop
    }

    private func wall(_ deadline: NIODeadline) -> UInt64 {
        startWallNanos &+ UInt64(max(0, (deadline - start).nanoseconds))
    }

    private func span(_ spanID: UInt64, _ name: String, _ kind: TraceSpan.Kind, from: UInt64, to: UInt64, error: String? = nil) -> TraceSpan {
        TraceSpan(traceIDHigh: context.traceIDHigh, traceIDLow: context.traceIDLow, spanID: spanID, parentSpanID: serverSpanID, name: name,
                  kind: kind, startNanos: from, endNanos: to, error: error)
    }

    /// A child of the server span for a wait of the decision (`TraceScope`), on whichever event loop it ended:
    /// exported on its own, never held for the server span.
    package func child(_ name: String, kind: TraceSpan.Kind, from: NIODeadline, to: NIODeadline, attributes: [(String, TraceSpan.Value)],
               error: String? = nil) {
        var writer = ProtobufWriter(capacity: 256)
        OTLPTraceEncoding.write(span(tracer.ids.spanID(), name, kind, from: wall(from), to: wall(to), error: error), into: &writer) { writer in
            for (key, value) in attributes { OTLPTraceEncoding.attribute(key, value, into: &writer) }
        }
        writer.withBytes { tracer.exporter.enqueue($0, count: 1) }
    }

    /// The request came through ext_authz (`gatehouse.via`).
    package func cameVia(_ via: String) {
        assert(eventLoop.inEventLoop)
        self.via = via
    }

    /// How the token was verified (`connection`, `hit`, `miss`) and by which provider: the verification span's.
    package func verified(cache: String, provider: String) {
        assert(eventLoop.inEventLoop)
        verification = (cache, provider)
    }

    /// The request was refused: the reason and, for an authentic token, its provider.
    package func refused(_ failure: AuthFailure) {
        assert(eventLoop.inEventLoop)
        refusal = (failure.reason.rawValue, failure.provider)
    }

    /// The route's `auth` the request was counted under.
    package func counted(routeAuth: String) {
        assert(eventLoop.inEventLoop)
        self.routeAuth = routeAuth
    }

    /// The verification's span: from the request's head to its decision.
    package func verification(from start: NIODeadline, took nanoseconds: Int64) {
        assert(eventLoop.inEventLoop)
        verifyTimes = (wall(start), wall(start + .nanoseconds(nanoseconds)))
    }

    /// The upstream call began (a retry's leg keeps the first one's start): `method` and `path` as sent.
    package func upstreamStarted(at now: NIODeadline, method: String, path: String) {
        assert(eventLoop.inEventLoop)
        guard upstream == nil else { return }
        upstream = UpstreamCall(start: now, method: method, path: path)
    }

    /// The upstream call ended: its response ended, or it failed (`error`). The first end counts.
    package func upstreamEnded(at now: NIODeadline, status: Int?, error: String?) {
        assert(eventLoop.inEventLoop)
        guard upstream?.end == nil else { return }
        upstream?.end = (now, status, error)
    }

    /// The server span ends: with the status the client got, or an error (the client went away). The request's
    /// spans are encoded and exported, once.
    package func finish(at now: NIODeadline, status: Int?, error: String? = nil) {
        assert(eventLoop.inEventLoop)
        guard !finished else { return }
        finished = true
        var writer = ProtobufWriter(capacity: 1024)
        var spans = 1
        if let verifyTimes {
            writeVerification(verifyTimes, into: &writer)
            spans += 1
        }
        if let upstream, let end = upstream.end {
            writeUpstreamCall(upstream, end: end, into: &writer)
            spans += 1
        }
        var server = TraceSpan(
            traceIDHigh: context.traceIDHigh, traceIDLow: context.traceIDLow, spanID: serverSpanID, parentSpanID: context.parentSpanID,
            name: request.method, kind: .server, startNanos: startWallNanos, endNanos: wall(now), traceState: context.traceState)
        if let status, status >= 500 { server.error = "HTTP \(status)" }
        if let error { server.error = error }
        OTLPTraceEncoding.write(server, into: &writer) { writer in
            request.write(into: &writer)
            if let via { OTLPTraceEncoding.attribute("gatehouse.via", .string(via), into: &writer) }
            writeRefusal(into: &writer)
            if let routeAuth { OTLPTraceEncoding.attribute("gatehouse.route.auth", .string(routeAuth), into: &writer) }
            if let status { OTLPTraceEncoding.attribute("http.response.status_code", .int(Int64(status)), into: &writer) }
        }
        writer.withBytes { tracer.exporter.enqueue($0, count: spans) }
    }

    private func writeVerification(_ times: (from: UInt64, to: UInt64), into writer: inout ProtobufWriter) {
        let verify = span(tracer.ids.spanID(), "gatehouse.verify", .internal, from: times.from, to: times.to, error: refusal?.reason)
        OTLPTraceEncoding.write(verify, into: &writer) { writer in
            writeRefusal(into: &writer)
            if let (cache, provider) = verification {
                OTLPTraceEncoding.attribute("gatehouse.verification.cache", .string(cache), into: &writer)
                OTLPTraceEncoding.attribute("gatehouse.provider", .string(provider), into: &writer)
            }
        }
    }

    private func writeUpstreamCall(_ call: UpstreamCall, end: (at: NIODeadline, status: Int?, error: String?), into writer: inout ProtobufWriter) {
        let client = span(upstreamSpanID, request.method, .client, from: wall(call.start), to: wall(end.at),
                          error: end.error ?? end.status.flatMap { $0 >= 400 ? "HTTP \($0)" : nil })
        OTLPTraceEncoding.write(client, into: &writer) { writer in
            writer.writeRaw(tracer.upstreamAttributes.bytes)
            OTLPTraceEncoding.attribute("http.request.method", .string(call.method), into: &writer)
            OTLPTraceEncoding.attribute("url.path", .string(call.path), into: &writer)
            if let status = end.status { OTLPTraceEncoding.attribute("http.response.status_code", .int(Int64(status)), into: &writer) }
        }
    }

    /// A refusal's reason and provider (`gatehouse.reason`, `gatehouse.provider`).
    private func writeRefusal(into writer: inout ProtobufWriter) {
        guard let (reason, provider) = refusal else { return }
        OTLPTraceEncoding.attribute("gatehouse.reason", .string(reason), into: &writer)
        if let provider { OTLPTraceEncoding.attribute("gatehouse.provider", .string(provider), into: &writer) }
    }
}
