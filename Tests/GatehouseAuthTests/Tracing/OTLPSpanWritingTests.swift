import Testing
@testable import GatehouseTelemetry
import GatehouseSyntax

/// Spans as every sampled request's go through the protobuf writer: read back with Gatehouse's protobuf reader, across
/// the growth of its memory and the lengths that need more than one byte (a span over 127 bytes, an attribute over 16 KiB).
struct OTLPSpanWritingTests {
    /// The `KeyValue` attributes of one encoded `ScopeSpans.spans` field, and the span's name.
    static func readSpan(_ bytes: [UInt8]) throws -> (name: String, attributes: [String: String], rest: Int) {
        var outer = ProtobufReader(bytes[...])
        guard let (number, _) = try outer.nextField(), number == 2 else { throw ProtobufReader.Malformed("no span") }
        var span = try outer.readMessage()
        var name = ""
        var attributes: [String: String] = [:]
        while let (field, type) = try span.nextField() {
            switch field {
            case 5: name = try span.readString()
            case 9:
                var pair = try span.readMessage()
                var key = ""
                var value = ""
                while let (inner, innerType) = try pair.nextField() {
                    if inner == 1 { key = try pair.readString() } else if inner == 2 {
                        var any = try pair.readMessage()
                        while let (kind, kindType) = try any.nextField() {
                            if kind == 1 { value = try any.readString() } else if kind == 3 { value = String(try any.readVarint()) } else {
                                try any.skip(kindType)
                            }
                        }
                    } else { try pair.skip(innerType) }
                }
                attributes[key] = value
            default: try span.skip(type)
            }
        }
        var rest = 0
        while let (_, type) = try outer.nextField() {
            try outer.skip(type)
            rest += 1
        }
        return (name, attributes, rest)
    }

    static func span(name: String) -> TraceSpan {
        TraceSpan(traceIDHigh: 1, traceIDLow: 2, spanID: 3, parentSpanID: 4, name: name, kind: .server, startNanos: 5, endNanos: 6)
    }

    @Test(arguments: [0, 1, 100, 127, 128, 300, 16_383, 16_384, 70_000])
    func aSpanOfAnyLengthReadsBack(_ agentLength: Int) throws {
        let agent = String(repeating: "a", count: agentLength)
        var writer = ProtobufWriter(capacity: 16)  // grown many times over
        OTLPTraceEncoding.write(Self.span(name: "GET"), into: &writer) { writer in
            OTLPTraceEncoding.attribute("user_agent.original", .string(agent), into: &writer)
            OTLPTraceEncoding.attribute("url.path", "/x?secret"[..<"/x?secret".firstIndex(of: "?")!], into: &writer)
            OTLPTraceEncoding.attribute("server.port", .int(8443), into: &writer)
        }
        let read = try Self.readSpan(writer.bytes)
        #expect(read.name == "GET" && read.rest == 0)
        #expect(read.attributes == ["user_agent.original": agent, "url.path": "/x", "server.port": "8443"])
    }

    @Test func spansFollowEachOtherAndPreEncodedAttributesAreCopiedAsTheyAre() throws {
        let constant = SpanAttributes([("server.address", .string("upstream.internal")), ("url.scheme", .string("http"))])
        var writer = ProtobufWriter(capacity: 64)
        OTLPTraceEncoding.write(Self.span(name: String(repeating: "n", count: 200)), into: &writer) { $0.writeRaw(constant.bytes) }
        OTLPTraceEncoding.write(Self.span(name: "second"), into: &writer) { _ in }
        let read = try Self.readSpan(writer.bytes)
        #expect(read.name.count == 200 && read.rest == 1)
        #expect(read.attributes == ["server.address": "upstream.internal", "url.scheme": "http"])
    }
}
