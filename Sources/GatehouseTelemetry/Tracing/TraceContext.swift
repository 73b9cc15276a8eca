import Atomics

/// W3C Trace Context (https://www.w3.org/TR/trace-context/): the `traceparent` a request came with, and the one
/// Gatehouse sends on. Ids are random (`TraceIDs`); a malformed `traceparent` starts a new trace, as §4.3 says.
package struct TraceContext: Sendable, Equatable {
    /// 16 bytes, never all zero, as two halves.
    let traceIDHigh: UInt64
    let traceIDLow: UInt64
    /// The caller's span (the parent of Gatehouse's server span); nil for a trace Gatehouse started.
    let parentSpanID: UInt64?
    let sampled: Bool
    /// The caller's `tracestate`, passed on unchanged with a valid `traceparent` (at most 512 bytes, §3.3.1.5).
    package let traceState: String?

    /// The context of a request: continued from a valid `traceparent` (with its `tracestate`), or new.
    package static func of(traceParent: String?, traceState: String?, ids: TraceIDs, sampleRoot: (UInt64) -> Bool) -> TraceContext {
        if let traceParent, let parsed = parse(traceParent) {
            let state = traceState.flatMap { $0.utf8.count <= 512 && !$0.isEmpty ? $0 : nil }
            return TraceContext(traceIDHigh: parsed.high, traceIDLow: parsed.low, parentSpanID: parsed.parent, sampled: parsed.sampled, traceState: state)
        }
        let (high, low) = ids.traceID()
        return TraceContext(traceIDHigh: high, traceIDLow: low, parentSpanID: nil, sampled: sampleRoot(low), traceState: nil)
    }

    /// `00-<32 hex>-<16 hex>-<2 hex>`; a higher version is read by its first four fields (§4.3).
    package static func parse(_ text: String) -> (high: UInt64, low: UInt64, parent: UInt64, sampled: Bool)? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 55, bytes[2] == UInt8(ascii: "-"), bytes[35] == UInt8(ascii: "-"), bytes[52] == UInt8(ascii: "-"),
              let version = hex(bytes[0..<2]), version != 0xFF, version != 0 || bytes.count == 55,
              version == 0 || bytes.count == 55 || bytes[55] == UInt8(ascii: "-"),
              let high = hex(bytes[3..<19]), let low = hex(bytes[19..<35]), high | low != 0,
              let parent = hex(bytes[36..<52]), parent != 0, let flags = hex(bytes[53..<55])
        else { return nil }
        return (high, low, parent, flags & 1 == 1)
    }

    /// The `traceparent` for a request Gatehouse sends as `spanID`'s child: written in place, one allocation.
    package func traceParent(spanID: UInt64) -> String {
        String(unsafeUninitializedCapacity: 55) { bytes in
            bytes[0] = UInt8(ascii: "0")
            bytes[1] = UInt8(ascii: "0")
            bytes[2] = UInt8(ascii: "-")
            Self.writeHex(traceIDHigh, into: bytes, at: 3)
            Self.writeHex(traceIDLow, into: bytes, at: 19)
            bytes[35] = UInt8(ascii: "-")
            Self.writeHex(spanID, into: bytes, at: 36)
            bytes[52] = UInt8(ascii: "-")
            bytes[53] = UInt8(ascii: "0")
            bytes[54] = sampled ? UInt8(ascii: "1") : UInt8(ascii: "0")
            return 55
        }
    }

    private static func writeHex(_ value: UInt64, into bytes: UnsafeMutableBufferPointer<UInt8>, at start: Int) {
        for index in 0..<16 {
            let nibble = UInt8(truncatingIfNeeded: value >> UInt64(60 - 4 * index)) & 0xF
            bytes[start + index] = nibble < 10 ? nibble + UInt8(ascii: "0") : nibble - 10 + UInt8(ascii: "a")
        }
    }

    /// Lower-case hex digits only (§3.2.2.3: upper case is invalid).
    private static func hex(_ digits: ArraySlice<UInt8>) -> UInt64? {
        var value: UInt64 = 0
        for digit in digits {
            let nibble: UInt8
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = digit - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = digit - UInt8(ascii: "a") + 10
            default: return nil
            }
            value = value << 4 | UInt64(nibble)
        }
        return value
    }
}

/// Random trace and span ids without a system call per id: a counter run through SplitMix64 from a random seed.
/// Unique within the process and unpredictable without the seed, which is what W3C asks of them (§3.2.2.3).
package final class TraceIDs: Sendable {
    private let seed: UInt64
    private let counter = ManagedAtomic<UInt64>(0)

    init() {
        var generator = SystemRandomNumberGenerator()
        seed = generator.next()
    }

    func spanID() -> UInt64 {
        let id = Self.mix(seed &+ counter.wrappingIncrementThenLoad(ordering: .relaxed) &* 0x9E37_79B9_7F4A_7C15)
        return id == 0 ? 1 : id
    }

    func traceID() -> (UInt64, UInt64) { (spanID(), spanID()) }

    private static func mix(_ value: UInt64) -> UInt64 {
        var z = value
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
