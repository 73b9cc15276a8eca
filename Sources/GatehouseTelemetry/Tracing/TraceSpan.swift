import GatehouseSyntax

/// One span as exported (OTLP `Span`), less its attributes: ids, name, kind, times in Unix nanoseconds, status.
/// Written straight into an export's bytes (`OTLPTraceEncoding.write`), with its attributes written after it.
package struct TraceSpan {
    package enum Kind: UInt64, Sendable {
        case `internal` = 1, server = 2, client = 3
    }

    package enum Value: Sendable, Equatable {
        case string(String)
        case int(Int64)
        case bool(Bool)
    }

    let traceIDHigh: UInt64
    let traceIDLow: UInt64
    let spanID: UInt64
    let parentSpanID: UInt64?
    package let name: String
    package let kind: Kind
    let startNanos: UInt64
    let endNanos: UInt64
    /// An error span's description (OTLP status ERROR); nil: status unset.
    package var error: String? = nil
    /// The caller's `tracestate`, on the server span.
    package var traceState: String? = nil

    init(
        traceIDHigh: UInt64, traceIDLow: UInt64, spanID: UInt64, parentSpanID: UInt64?, name: String, kind: Kind, startNanos: UInt64,
        endNanos: UInt64, error: String? = nil, traceState: String? = nil
    ) {
        self.traceIDHigh = traceIDHigh
        self.traceIDLow = traceIDLow
        self.spanID = spanID
        self.parentSpanID = parentSpanID
        self.name = name
        self.kind = kind
        self.startNanos = startNanos
        self.endNanos = endNanos
        self.error = error
        self.traceState = traceState
    }
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
