/// Where a scanner must look at bytes one by one, found eight bytes at a time: a header section is mostly printable
/// ASCII, and only its line ends, control bytes and bytes above 0x7E need a look of their own. Each word is tested
/// with the carry-free byte tests of "Bit Twiddling Hacks" (`hasless`, `hasmore`), which never miss a byte they look
/// for (they may flag a word that has none: its bytes are then looked at one by one).
package enum ByteRuns {
    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highBits: UInt64 = 0x8080_8080_8080_8080

    /// The index of the first byte below `bound` (at most 0x80) in `start..<end`, else `end`.
    package static func firstByte(below bound: UInt8, in bytes: UnsafeRawBufferPointer, from start: Int, to end: Int) -> Int {
        precondition(bound <= 0x80 && start >= 0 && end <= bytes.count)  // safe: callers pass constants and their own bounds
        let repeated = ones &* UInt64(bound)
        var index = start
        while index + 8 <= end {
            let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self))
            // A byte below `bound` borrows in the subtraction and has its high bit clear: the lowest such byte sets its
            // high bit here; bytes at or above `bound` (0x80 and up too) neither borrow nor set one.
            if (word &- repeated) & ~word & highBits != 0 {
                for offset in index..<index + 8 where bytes[offset] < bound { return offset }
            }
            index += 8
        }
        while index < end, bytes[index] >= bound { index += 1 }
        return index
    }

    /// The index of the first byte in `start..<end` that is not printable ASCII (0x20 through 0x7E: a control byte, a
    /// tab, DEL or a byte above 0x7F), else `end`.
    package static func firstNonPrintable(in bytes: UnsafeRawBufferPointer, from start: Int, to end: Int) -> Int {
        precondition(start >= 0 && end <= bytes.count)  // safe: callers pass their own bounds
        var index = start
        while index + 8 <= end {
            let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self))
            let below = (word &- ones &* 0x20) & ~word & highBits  // a byte below 0x20
            let above = ((word &+ ones) | word) & highBits  // 0x7F (+1 reaches 0x80), or a byte with its high bit set
            if below | above != 0 {
                for offset in index..<index + 8 where !isPrintable(bytes[offset]) { return offset }
            }
            index += 8
        }
        while index < end, isPrintable(bytes[index]) { index += 1 }
        return index
    }

    private static func isPrintable(_ byte: UInt8) -> Bool { byte >= 0x20 && byte <= 0x7E }
}
