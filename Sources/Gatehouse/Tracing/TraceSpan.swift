/// One finished span, as exported (OTLP `Span`): ids, name, kind, times in Unix nanoseconds, attributes, status.
struct TraceSpan: Sendable {
    enum Kind: UInt64, Sendable {
        case `internal` = 1, server = 2, client = 3
    }

    enum Value: Sendable, Equatable {
        case string(String)
        case int(Int64)
        case bool(Bool)
    }

    let traceIDHigh: UInt64
    let traceIDLow: UInt64
    let spanID: UInt64
    let parentSpanID: UInt64?
    let name: String
    let kind: Kind
    let startNanos: UInt64
    var endNanos: UInt64
    var attributes: [(String, Value)]
    /// An error span's description (OTLP status ERROR); nil: status unset.
    var error: String?
    /// The caller's `tracestate`, on the server span.
    var traceState: String?
}
