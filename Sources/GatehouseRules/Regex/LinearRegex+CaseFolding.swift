extension LinearRegex {
    /// Simple Unicode case folding for `(?i)`, as orbits: the sets of scalars that are case variants of each other
    /// (`k K` and the Kelvin sign `K`; `s S ſ`; `σ ς Σ`).
    ///
    /// RE2 ships Unicode's CaseFolding.txt as a table. Rather than carry a copy, the orbits are derived once from
    /// the standard library's case mappings: every one-scalar lowercase, uppercase or titlecase mapping links two
    /// scalars, and the orbits are the connected groups. Multi-scalar mappings (`ß` → `SS`) are full, not simple,
    /// folding and are skipped, as RE2 skips them. The dotted and dotless Turkish i (U+0130, U+0131) are left out:
    /// their mappings are Turkic-specific, and RE2 does not fold them with `i`/`I` either.
    enum CaseFolding {
        /// Built on first use (a static `let` is initialised once, thread-safely).
        static let table = Table()

        struct Table: Sendable {
            /// Every scalar that has a case variant, sorted.
            let scalars: [UInt32]
            /// `orbitIndex[i]` is the orbit of `scalars[i]`.
            let orbitIndex: [Int]
            let orbits: [[UInt32]]

            /// Every cased scalar lies below U+20000 (the last cased script, Adlam, ends at U+1E95F).
            private static let scanLimit: UInt32 = 0x1FFFF
            private static let excluded: Set<UInt32> = [0x130, 0x131]

            init() {
                var parent: [UInt32: UInt32] = [:]
                func root(_ value: UInt32) -> UInt32 {
                    var value = value
                    while let up = parent[value], up != value { value = up }
                    return value
                }
                for value in 0...Self.scanLimit {
                    guard let scalar = Unicode.Scalar(value), !Self.excluded.contains(value) else { continue }
                    let properties = scalar.properties
                    guard properties.changesWhenCaseMapped else { continue }
                    for mapping in [properties.lowercaseMapping, properties.uppercaseMapping, properties.titlecaseMapping] {
                        let mapped = mapping.unicodeScalars
                        guard mapped.count == 1, let other = mapped.first?.value, other != value,
                              !Self.excluded.contains(other) else { continue }
                        if parent[value] == nil { parent[value] = value }
                        if parent[other] == nil { parent[other] = other }
                        let (a, b) = (root(value), root(other))
                        if a != b { parent[a] = b }
                    }
                }
                var members: [UInt32: [UInt32]] = [:]
                for value in parent.keys { members[root(value), default: []].append(value) }
                var orbits: [[UInt32]] = []
                var orbitOf: [UInt32: Int] = [:]
                for orbit in members.values {
                    for value in orbit { orbitOf[value] = orbits.count }
                    orbits.append(orbit.sorted())
                }
                let scalars = orbitOf.keys.sorted()
                self.scalars = scalars
                self.orbitIndex = scalars.map { orbitOf[$0] ?? 0 }
                self.orbits = orbits
            }

            /// The index of the first entry of `scalars` that is `>= value` (`scalars.count` if none).
            func firstIndex(atLeast value: UInt32) -> Int {
                var low = 0
                var high = scalars.count
                while low < high {
                    let middle = low + (high - low) / 2
                    if scalars[middle] < value { low = middle + 1 } else { high = middle }
                }
                return low
            }
        }
    }
}
