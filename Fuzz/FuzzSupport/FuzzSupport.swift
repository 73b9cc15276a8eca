// What the fuzz targets share: the switch that prints an input's outcome, and how a connection's
// bytes are cut into reads.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `FUZZ_PRINT=1 .build-fuzz/debug/<target> <file>` prints what the parser made of an input.
public let printOutcome = getenv("FUZZ_PRINT") != nil

/// How the bytes arrive, chosen by an input's first byte: the low 3 bits choose the read size (0: all
/// at once, then 1, 2, 3, 7, 16, 64 bytes, 7: varying), bit 3 is the target's own switch, the high 4
/// bits vary the varying read sizes.
public struct SplitPattern {
    public let selector: UInt8
    private var reads = 0

    public init(_ selector: UInt8) { self.selector = selector }

    public var isWhole: Bool { selector & 0x07 == 0 }
    /// Bit 3: what the target makes of it is its own.
    public var flag: Bool { selector & 0x08 != 0 }

    public mutating func nextReadSize(remaining: Int) -> Int {
        reads += 1
        let size: Int
        switch selector & 0x07 {
        case 0: size = remaining
        case 1: size = 1
        case 2: size = 2
        case 3: size = 3
        case 4: size = 7
        case 5: size = 16
        case 6: size = 64
        default: size = 1 + (reads &* (Int(selector >> 4) * 2 + 3)) % 31
        }
        return min(size, remaining)
    }
}

/// An invariant of a target: a violation stops the run (libFuzzer saves the input as a crash).
@inline(never)
public func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}
