/// RE2-syntax regular expression matched in time linear in the text (a state-set simulation of its NFA).
///
/// This backs the rule language's `string.matches(pattern)`. Rules are written by operators but evaluated against
/// request data an attacker chooses, so the matcher must not backtrack: a backtracking engine takes exponential time
/// on `(a|aa)*c` against a run of `a`s, and one such rule would let any client pin a CPU. Here the pattern is compiled
/// to a Thompson NFA (`Compiler`, `Program`) and the text is scanned once (`Scan`), carrying the *set* of NFA states
/// alive at each position (each state at most once), so the work per scalar is bounded by `programSize` whatever
/// the pattern.
///
/// Only a yes/no answer is needed, with no capture positions: that is what makes the plain state set enough (which
/// path reached a state, and so greediness or laziness, does not change whether *some* path reaches `match`).
///
/// The syntax is RE2's (the language CEL specifies for `matches`); see `Parser` for what is accepted and refused.
/// Text is matched scalar by scalar, as RE2 matches UTF-8 text code point by code point. `\pL`-style Unicode
/// classes are refused as unsupported rather than approximated.
struct LinearRegex: Sendable {
    /// A pattern that is not valid RE2 syntax, or uses a feature this matcher refuses; `message` names the problem
    /// and its offset (counted in Unicode scalars from 0).
    struct SyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
        let message: String
        var description: String { message }
    }

    /// The largest program compiled: RE2 refuses oversized programs too (through its memory budget). It bounds both
    /// compile-time memory (`(a{1000}){1000}` is refused, not expanded) and the per-scalar cost of `matches`.
    static let maxProgramSize = 10_000

    private let program: Program

    init(_ pattern: String) throws(SyntaxError) {
        let tree = try Parser.parse(pattern)
        program = try Compiler.compile(tree, limit: Self.maxProgramSize)
    }

    /// The number of instructions of the compiled program: the per-scalar cost of `matches` is at most this.
    var programSize: Int { program.instructions.count }

    /// Whether some substring of `text` matches (RE2 partial match, CEL `matches`).
    func matches(_ text: String) -> Bool {
        program.instructions.withUnsafeBufferPointer { instructions in
            program.ranges.withUnsafeBufferPointer { ranges in
                let scan = Scan(instructions: instructions, ranges: ranges, anchoredAtStart: program.anchoredAtStart)
                defer { scan.deallocate() }
                return scan.search(text, start: program.start)
            }
        }
    }
}
