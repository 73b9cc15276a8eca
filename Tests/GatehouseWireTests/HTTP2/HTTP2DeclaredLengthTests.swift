import Testing
import GatehouseHTTP

/// A request's `content-length` against its DATA (RFC 9113 §8.1.1).
struct HTTP2DeclaredLengthTests {
    /// What each arrival (bytes, whether it ends the stream) was judged, in order.
    static func verdicts(declared: Int?, _ arrivals: [(Int, Bool)]) -> [Bool] {
        var length = HTTP2DeclaredLength(declared: declared)
        return arrivals.map { length.received($0.0, endStream: $0.1) }
    }

    @Test func theDeclaredBytesPassInAnySlices() {
        #expect(Self.verdicts(declared: 5, [(2, false), (3, false), (0, true)]) == [true, true, true])
        #expect(Self.verdicts(declared: 5, [(5, true)]) == [true])
    }

    @Test func moreThanDeclaredIsRefusedAtTheArrivalThatOverflows() {
        #expect(Self.verdicts(declared: 3, [(3, false), (1, false)]) == [true, false])
        #expect(Self.verdicts(declared: 3, [(5, true)]) == [false])
    }

    @Test func anEndBeforeTheDeclaredBytesIsRefused() {
        #expect(Self.verdicts(declared: 9, [(5, false), (0, true)]) == [true, false])
        #expect(Self.verdicts(declared: 5, [(0, true)]) == [false])
    }

    @Test func withoutADeclaredLengthAnythingGoes() {
        #expect(Self.verdicts(declared: nil, [(1 << 20, false), (0, true)]) == [true, true])
    }
}
