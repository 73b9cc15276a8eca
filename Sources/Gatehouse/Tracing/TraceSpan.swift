import GatehouseSyntax
/// One span as exported (OTLP `Span`), less its attributes: ids, name, kind, times in Unix nanoseconds, status.
/// Written straight into an export's bytes (`OTLPTraceEncoding.write`), with its attributes written after it.
struct TraceSpan {
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
    let endNanos: UInt64
    /// An error span's description (OTLP status ERROR); nil: status unset.
    var error: String? = nil
    /// The caller's `tracestate`, on the server span.
    var traceState: String? = nil
}

/// Attributes encoded once, as the `KeyValue` fields of a `Span` (`attributes`, field 9): the upstream's address for
/// every upstream span, the list a wait's span was given.
struct SpanAttributes: Sendable {
    let bytes: [UInt8]

    init(_ pairs: [(String, TraceSpan.Value)]) {
        var writer = ProtobufWriter(capacity: pairs.count * 32)
        for (key, value) in pairs { OTLPTraceEncoding.attribute(key, value, into: &writer) }
        bytes = writer.bytes
    }
}
