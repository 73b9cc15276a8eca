/// Spans as OTLP's `ExportTraceServiceRequest` (opentelemetry-proto, `collector/trace/v1`), the body of an
/// OTLP/HTTP export in its binary protobuf form (`application/x-protobuf`).
enum OTLPTraceEncoding {
    static func request(_ spans: some Collection<TraceSpan>, resource: [(String, TraceSpan.Value)], scope: String, version: String) -> [UInt8] {
        var writer = ProtobufWriter(reservingCapacity: 256 + spans.count * 256)
        writer.writeMessageField(1) { resourceSpans in  // ResourceSpans
            resourceSpans.writeMessageField(1) { message in  // Resource
                for (key, value) in resource { keyValue(key, value, field: 1, into: &message) }
            }
            resourceSpans.writeMessageField(2) { scopeSpans in  // ScopeSpans
                scopeSpans.writeMessageField(1) { instrumentation in
                    instrumentation.writeStringField(1, scope)
                    instrumentation.writeStringField(2, version)
                }
                for span in spans { scopeSpans.writeMessageField(2) { write(span, into: &$0) } }
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
        for (key, value) in span.attributes { keyValue(key, value, field: 9, into: &writer) }
        if let error = span.error {
            writer.writeMessageField(15) { status in
                status.writeStringField(2, error)
                status.writeVarintField(3, 2)  // STATUS_CODE_ERROR
            }
        }
    }

    private static func keyValue(_ key: String, _ value: TraceSpan.Value, field: Int, into writer: inout ProtobufWriter) {
        writer.writeMessageField(field) { pair in
            pair.writeStringField(1, key)
            pair.writeMessageField(2) { any in
                switch value {
                case .string(let text): any.writeStringField(1, text, always: true)
                case .bool(let flag): any.writeVarintField(2, flag ? 1 : 0, always: true)
                case .int(let number): any.writeVarintField(3, UInt64(bitPattern: number), always: true)
                }
            }
        }
    }
}
