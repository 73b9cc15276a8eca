/// The trace headers sent on with a request: `traceparent`, and the caller's `tracestate` (W3C Trace Context), made by
/// the tracer and written upstream by the request core.
package struct TracePropagation: Sendable, Equatable {
    package let traceParent: String
    package let traceState: String?

    package init(traceParent: String, traceState: String?) {
        self.traceParent = traceParent
        self.traceState = traceState
    }
}
