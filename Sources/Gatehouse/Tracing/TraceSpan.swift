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
    var attributes: SpanAttributes
    /// An error span's description (OTLP status ERROR); nil: status unset.
    var error: String?
    /// The caller's `tracestate`, on the server span.
    var traceState: String?
}

/// A span's attributes, kept as they are exported (OTLP `KeyValue` fields of a `Span`): one byte array, no list of
/// keys and values to allocate and encode again later.
struct SpanAttributes: Sendable {
    private(set) var writer: ProtobufWriter

    init(reservingCapacity capacity: Int = 64) {
        writer = ProtobufWriter(reservingCapacity: capacity)
    }

    init(_ pairs: [(String, TraceSpan.Value)]) {
        self.init(reservingCapacity: pairs.count * 32)
        for (key, value) in pairs { add(key, value) }
    }

    mutating func add(_ key: String, _ value: TraceSpan.Value) {
        OTLPTraceEncoding.keyValue(key, value, field: 9, into: &writer)  // Span.attributes
    }

    mutating func add(_ other: SpanAttributes) {
        writer.appendRaw(other.writer.bytes)
    }

    var bytes: [UInt8] { writer.bytes }

    /// The verification span's: how the token was verified (`connection`, `hit`, `miss`) and by which provider.
    static func verification(cache: String, provider: String) -> SpanAttributes {
        var attributes = SpanAttributes(reservingCapacity: 96)
        attributes.add("gatehouse.verification.cache", .string(cache))
        attributes.add("gatehouse.provider", .string(provider))
        return attributes
    }
}
