import NIOConcurrencyHelpers
import NIOCore

/// The spans of one request (docs/reference.md §16): its server span, the span of its verification, of what the
/// decision waited on (`TraceScope`), and of the upstream call. Times are taken on the monotonic clock and
/// placed on the wall clock read once, at the request's start. Locked: a child span may end on another event loop
/// (an HTTP client's). Made for sampled traces only (`TraceStart`); handed to the exporter when the server span ends.
final class RequestTrace: @unchecked Sendable {
    let context: TraceContext
    let serverSpanID: UInt64
    /// The upstream call's span, chosen up front: its id is the parent in the `traceparent` the upstream gets.
    let upstreamSpanID: UInt64
    private let ids: TraceIDs
    private let exporter: SpanExporter
    private let startWallNanos: UInt64
    private let start: NIODeadline
    private let lock = NIOLock()
    private var server: TraceSpan
    private var children: [TraceSpan]
    private var upstreamStart: NIODeadline?
    private var upstreamAttributes = SpanAttributes(reservingCapacity: 0)
    private var finished = false
    private var verificationAttributes: SpanAttributes?

    init(context: TraceContext, serverSpanID: UInt64, upstreamSpanID: UInt64, ids: TraceIDs, exporter: SpanExporter, start: NIODeadline,
         wallNanos: UInt64, name: String, attributes: SpanAttributes) {
        self.context = context
        self.ids = ids
        self.exporter = exporter
        self.start = start
        startWallNanos = wallNanos
        self.serverSpanID = serverSpanID
        self.upstreamSpanID = upstreamSpanID
        children = []
        children.reserveCapacity(4)  // verification, a wait or two, the upstream call; then the server span
        server = TraceSpan(
            traceIDHigh: context.traceIDHigh, traceIDLow: context.traceIDLow, spanID: serverSpanID, parentSpanID: context.parentSpanID,
            name: name, kind: .server, startNanos: wallNanos, endNanos: wallNanos, attributes: attributes, error: nil,
            traceState: context.traceState)
    }

    private func wall(_ deadline: NIODeadline) -> UInt64 {
        startWallNanos &+ UInt64(max(0, (deadline - start).nanoseconds))
    }

    func addAttribute(_ name: String, _ value: TraceSpan.Value) {
        lock.withLock { server.attributes.add(name, value) }
    }

    /// A finished child of the server span.
    func child(_ name: String, kind: TraceSpan.Kind = .internal, from: NIODeadline, to: NIODeadline,
               attributes: [(String, TraceSpan.Value)], error: String? = nil) {
        child(name, kind: kind, from: from, to: to, attributes: SpanAttributes(attributes), error: error)
    }

    func child(_ name: String, kind: TraceSpan.Kind = .internal, from: NIODeadline, to: NIODeadline,
               attributes: SpanAttributes, error: String? = nil) {
        record(TraceSpan(
            traceIDHigh: context.traceIDHigh, traceIDLow: context.traceIDLow, spanID: ids.spanID(), parentSpanID: serverSpanID,
            name: name, kind: kind, startNanos: wall(from), endNanos: wall(to), attributes: attributes, error: error, traceState: nil))
    }

    /// A finished child: kept for the server span's end, or exported alone if that has passed (a wait that outlived it).
    private func record(_ span: TraceSpan) {
        let late: Bool = lock.withLock {
            if finished { return true }
            children.append(span)
            return false
        }
        if late { exporter.enqueue(OTLPTraceEncoding.spans([span]), count: 1) }
    }

    /// What the core recorded: the verification's span (from the request's head to its decision), a refusal's reason.
    func observe(_ records: ExchangeRecords, startedAt: NIODeadline?) {
        var attributes = SpanAttributes()
        if let rejection = records.rejection {
            attributes.add("gatehouse.reason", .string(rejection.failure.reason.rawValue))
            if let provider = rejection.failure.provider { attributes.add("gatehouse.provider", .string(provider)) }
            lock.withLock { server.attributes.add(attributes) }
        }
        if let (routeAuth, _) = records.outcome { addAttribute("gatehouse.route.auth", .string(routeAuth)) }
        if let nanoseconds = records.authNanoseconds, let startedAt {
            if let verification { attributes.add(verification) }
            child("gatehouse.verify", from: startedAt, to: startedAt + .nanoseconds(nanoseconds), attributes: attributes,
                  error: records.rejection.map { $0.failure.reason.rawValue })
        }
    }

    /// How the token was verified (`gatehouse.verification.cache`, the provider), set by the gatekeeper's caller.
    var verification: SpanAttributes? {
        get { lock.withLock { verificationAttributes } }
        set { lock.withLock { verificationAttributes = newValue } }
    }

    /// The upstream call began (a retry's leg keeps the first one's start).
    func upstreamStarted(at now: NIODeadline, attributes: SpanAttributes) {
        lock.withLock {
            if upstreamStart == nil { upstreamStart = now }
            upstreamAttributes = attributes
        }
    }

    /// The upstream call ended: its response ended, or it failed (`error`).
    func upstreamEnded(at now: NIODeadline, status: Int?, error: String?) {
        let started: (NIODeadline, SpanAttributes)? = lock.withLock {
            defer { upstreamStart = nil }
            return upstreamStart.map { ($0, upstreamAttributes) }
        }
        guard let (from, attributes) = started else { return }
        var all = attributes
        if let status { all.add("http.response.status_code", .int(Int64(status))) }
        record(TraceSpan(
            traceIDHigh: context.traceIDHigh, traceIDLow: context.traceIDLow, spanID: upstreamSpanID, parentSpanID: serverSpanID,
            name: server.name, kind: .client, startNanos: wall(from), endNanos: wall(now), attributes: all,
            error: error ?? status.flatMap { $0 >= 400 ? "HTTP \($0)" : nil }, traceState: nil))
    }

    /// The server span ends: with the status the client got, or an error (the client went away). Exported once.
    func finish(at now: NIODeadline, status: Int?, error: String? = nil) {
        let spans: [TraceSpan]? = lock.withLock {
            guard !finished else { return nil }
            finished = true
            server.endNanos = wall(now)
            if let status {
                server.attributes.add("http.response.status_code", .int(Int64(status)))
                if status >= 500 { server.error = "HTTP \(status)" }
            }
            if let error { server.error = error }
            children.append(server)
            return children
        }
        if let spans { exporter.enqueue(OTLPTraceEncoding.spans(spans), count: spans.count) }
    }
}

/// The trace headers sent on with a request: `traceparent`, and the caller's `tracestate`.
struct TracePropagation: Sendable, Equatable {
    let traceParent: String
    let traceState: String?
}
