extension LinearRegex {
    /// A set of scalar values as sorted, disjoint, non-adjacent ranges: the one representation for literals,
    /// bracket classes, Perl and POSIX classes and `.`, so that negation and case folding are written once.
    /// Values run over the whole code space `0...0x10FFFF`; the surrogate gap is harmless (no text scalar is one).
    struct ScalarSet: Sendable, Hashable {
        static let maxValue: UInt32 = 0x10FFFF

        /// Sorted, disjoint and non-adjacent.
        private(set) var ranges: [ClosedRange<UInt32>]

        /// The set of the given ranges, in any order, overlapping or not.
        init(normalizing input: [ClosedRange<UInt32>]) {
            var merged: [ClosedRange<UInt32>] = []
            merged.reserveCapacity(input.count)
            for range in input.sorted(by: { $0.lowerBound < $1.lowerBound }) {
                if let last = merged.last, range.lowerBound <= last.upperBound + 1 {
                    merged[merged.count - 1] = last.lowerBound...max(last.upperBound, range.upperBound)
                } else {
                    merged.append(range)
                }
            }
            ranges = merged
        }

        init(_ value: UInt32) { ranges = [value...value] }

        /// Every scalar: `.` under flag `s`.
        static let all = ScalarSet(normalizing: [0...maxValue])
        /// Every scalar but `\n`: `.`.
        static let allButNewline = ScalarSet(normalizing: [0...0x09, 0x0B...maxValue])

        /// The complement within `0...0x10FFFF`.
        func inverted() -> ScalarSet {
            var result: [ClosedRange<UInt32>] = []
            var next: UInt32 = 0
            for range in ranges {
                if range.lowerBound > next { result.append(next...(range.lowerBound - 1)) }
                next = range.upperBound + 1
            }
            if next <= Self.maxValue { result.append(next...Self.maxValue) }
            return ScalarSet(normalizing: result)
        }

        /// The set with every member's case variants added (RE2's `(?i)`), using `CaseFolding`'s orbits. Cost is
        /// bounded by the number of cased scalars (a few thousand), not by the width of the ranges.
        func caseFolded() -> ScalarSet {
            let table = CaseFolding.table
            var result = ranges
            for range in ranges {
                var index = table.firstIndex(atLeast: range.lowerBound)
                while index < table.scalars.count, table.scalars[index] <= range.upperBound {
                    for variant in table.orbits[table.orbitIndex[index]] { result.append(variant...variant) }
                    index += 1
                }
            }
            return ScalarSet(normalizing: result)
        }

        /// `\d` `\s` `\w` and their negations, with RE2's ASCII meanings (`\s` is `[\t\n\f\r ]`, without `\v`).
        /// Under case folding the positive class is folded before negating, as RE2 does, so that `(?i)\W` does not
        /// swallow `k` through the Kelvin sign.
        static func perlClass(_ letter: Unicode.Scalar, caseInsensitive: Bool) -> ScalarSet? {
            let positive: ScalarSet
            switch letter {
            case "d", "D": positive = ScalarSet(normalizing: [0x30...0x39])
            case "s", "S": positive = ScalarSet(normalizing: [0x09...0x0A, 0x0C...0x0D, 0x20...0x20])
            case "w", "W": positive = ScalarSet(normalizing: [0x30...0x39, 0x41...0x5A, 0x5F...0x5F, 0x61...0x7A])
            default: return nil
            }
            let folded = caseInsensitive ? positive.caseFolded() : positive
            return letter.properties.isUppercase ? folded.inverted() : folded
        }

        /// The POSIX classes RE2 accepts inside brackets, `alpha` for `[:alpha:]` (ASCII meanings); `negated` for
        /// the `[:^alpha:]` form. Folded before negating, like `perlClass`.
        static func posixClass(named name: String, negated: Bool, caseInsensitive: Bool) -> ScalarSet? {
            let ranges: [ClosedRange<UInt32>]
            switch name {
            case "alnum": ranges = [0x30...0x39, 0x41...0x5A, 0x61...0x7A]
            case "alpha": ranges = [0x41...0x5A, 0x61...0x7A]
            case "ascii": ranges = [0x00...0x7F]
            case "blank": ranges = [0x09...0x09, 0x20...0x20]
            case "cntrl": ranges = [0x00...0x1F, 0x7F...0x7F]
            case "digit": ranges = [0x30...0x39]
            case "graph": ranges = [0x21...0x7E]
            case "lower": ranges = [0x61...0x7A]
            case "print": ranges = [0x20...0x7E]
            case "punct": ranges = [0x21...0x2F, 0x3A...0x40, 0x5B...0x60, 0x7B...0x7E]
            case "space": ranges = [0x09...0x0D, 0x20...0x20]
            case "upper": ranges = [0x41...0x5A]
            case "word": ranges = [0x30...0x39, 0x41...0x5A, 0x5F...0x5F, 0x61...0x7A]
            case "xdigit": ranges = [0x30...0x39, 0x41...0x46, 0x61...0x66]
            default: return nil
            }
            let positive = ScalarSet(normalizing: ranges)
            let folded = caseInsensitive ? positive.caseFolded() : positive
            return negated ? folded.inverted() : folded
        }
    }
}
