import GatehouseSyntax

/// Spans as OTLP's `ExportTraceServiceRequest` (opentelemetry-proto, `collector/trace/v1`), the body of an
/// OTLP/HTTP export in its binary protobuf form (`application/x-protobuf`). A request's spans are encoded when it
/// ends (`write`), as the `ScopeSpans.spans` fields they will be; an export wraps a run of them (`request`).
enum OTLPTraceEncoding {
    /// `span` as a `ScopeSpans.spans` field (2), its `KeyValue` attributes written by `attributes`.
    static func write(_ span: TraceSpan, into writer: inout ProtobufWriter, attributes: (inout ProtobufWriter) -> Void) {
        writer.writeMessageField(2) { writer in
            writer.writeWordsField(1, span.traceIDHigh, span.traceIDLow)
            writer.writeWordsField(2, span.spanID)
            if let state = span.traceState, !state.isEmpty { writer.writeStringField(3, state) }
            if let parent = span.parentSpanID { writer.writeWordsField(4, parent) }
            writer.writeStringField(5, span.name)
            writer.writeVarintField(6, span.kind.rawValue)
            writer.writeFixed64Field(7, span.startNanos)
            writer.writeFixed64Field(8, max(span.endNanos, span.startNanos))
            attributes(&writer)  // field 9
            if let error = span.error {
                writer.writeMessageField(15) { status in
                    status.writeStringField(2, error)
                    status.writeVarintField(3, 2)  // STATUS_CODE_ERROR
                }
            }
        }
    }

    /// The `Resource` message's fields, encoded once per exporter.
    static func resource(_ attributes: [(String, TraceSpan.Value)]) -> [UInt8] {
        var writer = ProtobufWriter(capacity: 256)
        for (key, value) in attributes { keyValue(key, value, field: 1, into: &writer) }
        return writer.bytes
    }

    /// An export of spans encoded by `write`: the body of one POST.
    static func request(encodedSpans: ArraySlice<UInt8>, resource: [UInt8], scope: String, version: String) -> [UInt8] {
        var writer = ProtobufWriter(capacity: encodedSpans.count + resource.count + 64)
        writer.writeMessageField(1) { resourceSpans in  // ResourceSpans
            resourceSpans.writeMessageField(1) { $0.writeRaw(resource) }  // Resource
            resourceSpans.writeMessageField(2) { scopeSpans in  // ScopeSpans
                scopeSpans.writeMessageField(1) { instrumentation in
                    instrumentation.writeStringField(1, scope)
                    instrumentation.writeStringField(2, version)
                }
                encodedSpans.withUnsafeBufferPointer { scopeSpans.writeRaw($0) }
            }
        }
        return writer.bytes
    }

    /// A span attribute (`Span.attributes`, field 9).
    static func attribute(_ key: String, _ value: TraceSpan.Value, into writer: inout ProtobufWriter) {
        keyValue(key, value, field: 9, into: &writer)
    }

    /// A string span attribute that is part of a string (of a header, of the request target).
    static func attribute(_ key: String, _ value: Substring, into writer: inout ProtobufWriter) {
        let count = value.utf8.count
        writeKeyValueHead(key, anyValue: 1 + varintSize(UInt64(count)) + count, field: 9, into: &writer)
        writer.writeStringField(1, value)
    }

    /// A `KeyValue` as field `field` of the message being written. Its lengths are known up front, so it is written
    /// straight through (no nested message to measure afterwards): one per attribute of every span.
    static func keyValue(_ key: String, _ value: TraceSpan.Value, field: Int, into writer: inout ProtobufWriter) {
        switch value {
        case .string(let text):
            let count = text.utf8.count
            writeKeyValueHead(key, anyValue: 1 + varintSize(UInt64(count)) + count, field: field, into: &writer)
            writer.writeStringField(1, text)
        case .bool(let flag):
            writeKeyValueHead(key, anyValue: 2, field: field, into: &writer)
            writer.writeVarintField(2, flag ? 1 : 0)
        case .int(let number):
            writeKeyValueHead(key, anyValue: 1 + varintSize(UInt64(bitPattern: number)), field: field, into: &writer)
            writer.writeVarintField(3, UInt64(bitPattern: number))
        }
    }

    /// A `KeyValue`'s key, length, its own key and the head of its `AnyValue` (`anyValue` bytes long, written next).
    private static func writeKeyValueHead(_ key: String, anyValue: Int, field: Int, into writer: inout ProtobufWriter) {
        let keyCount = key.utf8.count
        let pair = 1 + varintSize(UInt64(keyCount)) + keyCount + 1 + varintSize(UInt64(anyValue)) + anyValue
        writer.writeKey(field, .lengthDelimited)
        writer.writeVarint(UInt64(pair))
        writer.writeStringField(1, key)
        writer.writeKey(2, .lengthDelimited)
        writer.writeVarint(UInt64(anyValue))
    }

    private static func varintSize(_ value: UInt64) -> Int {
        var size = 1
        while value >> (7 * UInt64(size)) != 0 && size < 10 { size += 1 }
        return size
    }
}
