/// Spans as OTLP's `ExportTraceServiceRequest` (opentelemetry-proto, `collector/trace/v1`), the body of an
/// OTLP/HTTP export in its binary protobuf form (`application/x-protobuf`). A request's spans are encoded when it
/// ends (`spans`), as the `ScopeSpans.spans` fields they will be; an export wraps a run of them (`request`).
enum OTLPTraceEncoding {
    /// The spans as `ScopeSpans.spans` (field 2) fields, one after the other.
    static func spans(_ spans: [TraceSpan]) -> [UInt8] {
        var writer = ProtobufWriter(reservingCapacity: spans.count * 320)
        for span in spans { writer.writeMessageField(2) { write(span, into: &$0) } }
        return writer.bytes
    }

    /// The `Resource` message's fields, encoded once per exporter.
    static func resource(_ attributes: [(String, TraceSpan.Value)]) -> [UInt8] {
        var writer = ProtobufWriter(reservingCapacity: 256)
        for (key, value) in attributes { keyValue(key, value, field: 1, into: &writer) }
        return writer.bytes
    }

    /// An export of spans encoded by `spans(_:)`.
    static func request(encodedSpans: some Collection<UInt8>, resource: [UInt8], scope: String, version: String) -> [UInt8] {
        var writer = ProtobufWriter(reservingCapacity: encodedSpans.count + resource.count + 64)
        writer.writeMessageField(1) { resourceSpans in  // ResourceSpans
            resourceSpans.writeMessageField(1) { $0.appendRaw(resource) }  // Resource
            resourceSpans.writeMessageField(2) { scopeSpans in  // ScopeSpans
                scopeSpans.writeMessageField(1) { instrumentation in
                    instrumentation.writeStringField(1, scope)
                    instrumentation.writeStringField(2, version)
                }
                scopeSpans.appendRaw(encodedSpans)
            }
        }
        return writer.bytes
    }

    private static func write(_ span: TraceSpan, into writer: inout ProtobufWriter) {
        writer.writeWordsField(1, span.traceIDHigh, span.traceIDLow)
        writer.writeWordsField(2, span.spanID)
        if let state = span.traceState { writer.writeStringField(3, state) }
        if let parent = span.parentSpanID { writer.writeWordsField(4, parent) }
        writer.writeStringField(5, span.name)
        writer.writeVarintField(6, span.kind.rawValue)
        writer.writeFixed64Field(7, span.startNanos)
        writer.writeFixed64Field(8, max(span.endNanos, span.startNanos))
        writer.appendRaw(span.attributes.bytes)  // field 9, encoded as they were added
        if let error = span.error {
            writer.writeMessageField(15) { status in
                status.writeStringField(2, error)
                status.writeVarintField(3, 2)  // STATUS_CODE_ERROR
            }
        }
    }

    /// A `KeyValue` as field `field` of the message being written. Its lengths are known up front, so it is written
    /// straight through (no nested message to measure afterwards): one per attribute of every span.
    static func keyValue(_ key: String, _ value: TraceSpan.Value, field: Int, into writer: inout ProtobufWriter) {
        let keyCount = key.utf8.count
        let anyValue: Int  // the AnyValue message's length
        switch value {
        case .string(let text): anyValue = 1 + varintSize(UInt64(text.utf8.count)) + text.utf8.count
        case .bool: anyValue = 2
        case .int(let number): anyValue = 1 + varintSize(UInt64(bitPattern: number))
        }
        let pair = 1 + varintSize(UInt64(keyCount)) + keyCount + 1 + varintSize(UInt64(anyValue)) + anyValue
        writer.writeVarint(UInt64(field) << 3 | 2)
        writer.writeVarint(UInt64(pair))
        writer.writeStringField(1, key, always: true)
        writer.writeVarint(2 << 3 | 2)
        writer.writeVarint(UInt64(anyValue))
        switch value {
        case .string(let text): writer.writeStringField(1, text, always: true)
        case .bool(let flag): writer.writeVarintField(2, flag ? 1 : 0, always: true)
        case .int(let number): writer.writeVarintField(3, UInt64(bitPattern: number), always: true)
        }
    }

    private static func varintSize(_ value: UInt64) -> Int {
        var size = 1
        while value >> (7 * UInt64(size)) != 0 && size < 10 { size += 1 }
        return size
    }
}
