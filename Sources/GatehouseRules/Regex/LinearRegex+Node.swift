extension LinearRegex {
    /// The parsed pattern. Groups leave no node of their own (nothing is captured), and flags are already applied:
    /// a case-insensitive literal is a set of its case variants, `.` a set with or without `\n`, `^` a text or line
    /// assertion. So the compiler needs no knowledge of the syntax.
    indirect enum Node: Sendable {
        /// Matches the empty string (the empty pattern, an empty group or alternative).
        case empty
        /// Matches one scalar from the set (a literal, a class, `.`).
        case scalars(ScalarSet)
        /// Matches the empty string where the assertion holds.
        case assertion(Assertion)
        /// Matches the nodes one after another.
        case concatenation([Node])
        /// Matches any one of the nodes.
        case alternation([Node])
        /// Matches the node at least `min` and at most `max` times (`nil`: unbounded). Laziness is not recorded:
        /// it changes which match is reported, never whether there is one.
        case repetition(Node, min: Int, max: Int?)
    }
}
