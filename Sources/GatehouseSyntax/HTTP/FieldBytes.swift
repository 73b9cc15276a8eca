/// Field values read in place, as byte ranges of a head (request and response parsers alike): no
/// `String` is made to look at a token.
public enum FieldBytes {
    /// Calls `body` with each comma-separated element of a list value, whitespace trimmed, empty
    /// ones skipped (no array: this runs for every response).
    @inlinable public static func forEachToken(
        _ bytes: UnsafeRawBufferPointer, _ value: Range<Int>, _ body: (Range<Int>) throws -> Void
    ) rethrows {
        var start = value.lowerBound
        for index in value.lowerBound...value.upperBound where index == value.upperBound || bytes[index] == ASCIIByte.comma {
            var lower = start
            var upper = index
            while lower < upper, ASCIIByte.isOptionalWhitespace(bytes[lower]) { lower += 1 }
            while upper > lower, ASCIIByte.isOptionalWhitespace(bytes[upper - 1]) { upper -= 1 }
            if lower < upper { try body(lower..<upper) }
            start = index + 1
        }
    }

    @inlinable public static func equalsIgnoringCase(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>, _ lowercase: StaticString) -> Bool {
        guard range.count == lowercase.utf8CodeUnitCount else { return false }
        let expected = UnsafeRawBufferPointer(start: lowercase.utf8Start, count: lowercase.utf8CodeUnitCount)
        for offset in 0..<range.count where ASCIIByte.lowercased(bytes[range.lowerBound + offset]) != expected[offset] {
            return false
        }
        return true
    }
}
