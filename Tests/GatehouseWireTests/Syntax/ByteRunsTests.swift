import Testing
import GatehouseSyntax

/// The word-at-a-time scans the HTTP/1.1 head reader skips printable runs with find exactly the byte a byte-by-byte
/// scan finds: every byte value at every position of a word and across words, and random buffers, starts and ends.
struct ByteRunsTests {
    static func naiveFirstByte(below bound: UInt8, _ bytes: [UInt8], _ start: Int, _ end: Int) -> Int {
        (start..<end).first { bytes[$0] < bound } ?? end
    }

    static func naiveFirstNonPrintable(_ bytes: [UInt8], _ start: Int, _ end: Int) -> Int {
        (start..<end).first { !(0x20...0x7E).contains(bytes[$0]) } ?? end
    }

    @Test func everyByteValueAtEveryPositionIsFoundWhereAByteByByteScanFindsIt() {
        for value in UInt8.min...UInt8.max {
            for position in 0..<24 {
                var bytes = [UInt8](repeating: UInt8(ascii: "a"), count: 24)
                bytes[position] = value
                bytes.withUnsafeBytes { raw in
                    for bound: UInt8 in [0x0E, 0x20, 0x80] {
                        #expect(ByteRuns.firstByte(below: bound, in: raw, from: 0, to: 24) == Self.naiveFirstByte(below: bound, bytes, 0, 24))
                    }
                    #expect(ByteRuns.firstNonPrintable(in: raw, from: 0, to: 24) == Self.naiveFirstNonPrintable(bytes, 0, 24))
                }
            }
        }
    }

    @Test func randomBuffersStartsAndEnds() {
        var generator = SystemRandomNumberGenerator()
        // Mostly printable bytes with a few of every other kind, as a header section has.
        let alphabet: [UInt8] = Array(0x20...0x7E) + [0x00, 0x09, 0x0A, 0x0D, 0x0D, 0x0A, 0x7F, 0x80, 0xC3, 0xA9, 0xFF, 0x1F]
        for _ in 0..<2_000 {
            let count = Int.random(in: 0...70, using: &generator)
            let bytes = (0..<count).map { _ in
                Int.random(in: 0..<20, using: &generator) == 0 ? alphabet.randomElement(using: &generator)! : UInt8.random(in: 0x20...0x7E, using: &generator)  // safe: a non-empty literal
            }
            let start = Int.random(in: 0...count, using: &generator)
            let end = Int.random(in: start...count, using: &generator)
            bytes.withUnsafeBytes { raw in
                #expect(ByteRuns.firstByte(below: 0x0E, in: raw, from: start, to: end) == Self.naiveFirstByte(below: 0x0E, bytes, start, end))
                #expect(ByteRuns.firstNonPrintable(in: raw, from: start, to: end) == Self.naiveFirstNonPrintable(bytes, start, end))
            }
        }
    }
}
