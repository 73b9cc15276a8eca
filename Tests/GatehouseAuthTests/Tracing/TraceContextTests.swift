import Testing
@testable import GatehouseTelemetry

/// W3C Trace Context's `traceparent` (https://www.w3.org/TR/trace-context/ §3.2, §4.3): what continues a trace, what
/// starts a new one.
struct TraceContextTests {
    static let trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    static let parent = "00f067aa0ba902b7"

    @Test func aValidTraceparentIsContinuedWithItsState() {
        let context = TraceContext.of(traceParent: "00-\(Self.trace)-\(Self.parent)-01", traceState: "a=1,b=2", ids: TraceIDs(), sampleRoot: { _ in false })
        #expect(context.parentSpanID == 0x00F0_67AA_0BA9_02B7 && context.sampled && context.traceState == "a=1,b=2")
        #expect(context.traceParent(spanID: 0xABC) == "00-\(Self.trace)-0000000000000abc-01")
        let unsampled = TraceContext.of(traceParent: "00-\(Self.trace)-\(Self.parent)-00", traceState: nil, ids: TraceIDs(), sampleRoot: { _ in true })
        #expect(!unsampled.sampled, "the caller's decision, not the ratio")
        // A later version is read by its first four fields (§4.3); more after them only with a dash.
        #expect(TraceContext.parse("01-\(Self.trace)-\(Self.parent)-01-extra") != nil)
        #expect(TraceContext.parse("01-\(Self.trace)-\(Self.parent)-01") != nil)
    }

    @Test(arguments: [
        "", "00-\(trace)-\(parent)", "00-\(trace.uppercased())-\(parent)-01", "00-\(String(repeating: "0", count: 32))-\(parent)-01",
        "00-\(trace)-0000000000000000-01", "ff-\(trace)-\(parent)-01", "00-\(trace)-\(parent)-01-extra", "01-\(trace)-\(parent)-01x",
        "00-\(trace)-\(parent)-0g", "00_\(trace)-\(parent)-01", "00-\(trace.dropLast())-\(parent)0-01", " 00-\(trace)-\(parent)-01",
    ])
    func aMalformedTraceparentStartsANewTrace(_ header: String) {
        #expect(TraceContext.parse(header) == nil)
        let context = TraceContext.of(traceParent: header, traceState: "dropped=1", ids: TraceIDs(), sampleRoot: { _ in true })
        #expect(context.parentSpanID == nil && context.traceState == nil && context.sampled)
        #expect(context.traceIDHigh | context.traceIDLow != 0)
    }

    @Test func anOversizedTracestateIsNotPassedOn() {
        let context = TraceContext.of(
            traceParent: "00-\(Self.trace)-\(Self.parent)-01", traceState: String(repeating: "a", count: 513), ids: TraceIDs(), sampleRoot: { _ in true })
        #expect(context.traceState == nil && context.parentSpanID != nil)
    }

    @Test func idsAreNeverZeroAndDoNotRepeat() {
        let ids = TraceIDs()
        var seen = Set<UInt64>()
        for _ in 0..<10_000 { seen.insert(ids.spanID()) }
        #expect(seen.count == 10_000 && !seen.contains(0))
    }
}
