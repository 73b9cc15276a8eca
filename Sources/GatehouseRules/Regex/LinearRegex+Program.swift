extension LinearRegex {
    /// A zero-width test of the scalars around a position.
    enum Assertion: Sendable, Equatable {
        /// `\A`, and `^` outside multi-line mode.
        case beginText
        /// `\z`, and `$` outside multi-line mode (RE2's `$` does not match before a final `\n`, unlike Perl's).
        case endText
        /// `^` in multi-line mode: the text's start or just after a `\n`.
        case beginLine
        /// `$` in multi-line mode: the text's end or just before a `\n`.
        case endLine
        /// `\b`: an ASCII word scalar on exactly one side.
        case wordBoundary
        /// `\B`: the negation of `\b`.
        case notWordBoundary
    }

    /// One NFA state. Consuming states go on to `pc + 1`; the payloads are plain integers so that the simulation
    /// loop copies no reference-counted values.
    enum Instruction: Sendable, Equatable {
        /// Consumes exactly this scalar (a literal, the common case, kept apart from `ranges` to skip a search).
        case scalar(UInt32)
        /// Consumes a scalar in `Program.ranges[start ..< start + count]` (a character class; `count` may be 0).
        case ranges(start: Int, count: Int)
        /// Consumes any scalar (`.` under flag `s`).
        case any
        /// Consumes any scalar but `\n` (`.`).
        case anyButNewline
        /// Continues at both targets.
        case split(Int, Int)
        /// Continues at the target.
        case jump(Int)
        /// Continues at `pc + 1` if the assertion holds at the current position.
        case assert(Assertion)
        /// The pattern has matched.
        case match
    }

    /// A compiled pattern: its states, the class ranges they refer to (one shared array, sorted and disjoint within
    /// each class), and where to start.
    struct Program: Sendable {
        var instructions: [Instruction]
        var ranges: [ClosedRange<UInt32>]
        var start: Int
        /// Every match must begin at the text's start (`\A…` or `^…` outside multi-line mode), so the simulation
        /// seeds the start state once and stops as soon as no thread is left, instead of scanning on.
        var anchoredAtStart: Bool
    }
}
