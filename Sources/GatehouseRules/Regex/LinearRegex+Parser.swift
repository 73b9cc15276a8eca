extension LinearRegex {
    /// RE2 syntax → `Node`, by recursive descent over the pattern's scalars.
    ///
    /// Follows RE2's parser (Perl-like flags, the default for `RE2` and Go's `regexp`) where it decides what is
    /// valid: a repetition directly after another (`a**`, `a*?+`) is an error, `{` not starting a valid count is a
    /// literal, counts above 1000 are errors, and so are nested counts whose product exceeds 1000. Features that
    /// need backtracking (backreferences, lookaround, atomic groups) are refused with a message saying so, as are
    /// Unicode classes (`\p…`) and `\C`, which this matcher does not implement.
    ///
    /// Nesting is limited to 50 groups, where RE2 allows 1000. The parser, and the compiler that walks its tree,
    /// recurse once per level, and an unoptimised build spends about 3 KB of stack a level: 50 levels stay near
    /// 160 KB, safe on a 512 KB secondary thread (macOS's default) even when the caller is itself deep in
    /// recursion, such as a rule evaluator. No realistic pattern nests anywhere near that.
    struct Parser {
        static let maxRepeat = 1000
        static let maxNesting = 50

        /// The flags of `(?imsU)`, which hold to the end of the enclosing group.
        struct Flags {
            var caseInsensitive = false
            var multiLine = false
            var dotAll = false
            /// `U` swaps greedy and lazy; accepted and ignored, since greediness cannot change a yes/no answer.
            var ungreedy = false
        }

        let pattern: [Unicode.Scalar]
        var position = 0
        var flags = Flags()
        private var depth = 0
        private var groupNames: Set<String> = []

        private init(_ pattern: String) { self.pattern = Array(pattern.unicodeScalars) }

        static func parse(_ pattern: String) throws(SyntaxError) -> Node {
            var parser = Parser(pattern)
            let node = try parser.parseAlternation()
            if parser.position < parser.pattern.count {
                // parseAlternation stops only at the end or at a `)` it has no group for.
                throw parser.error("unexpected ): no group is open", at: parser.position)
            }
            if repetitionBudget(node, 1000) == 0 {
                throw SyntaxError(message: "invalid repetition size: nested counted repetitions multiply to more "
                    + "than \(maxRepeat)")
            }
            return node
        }

        /// RE2's check that nested counted repetitions do not multiply past 1000: the budget is divided by each
        /// enclosing count (the maximum, or the minimum if unbounded) on the way down, and 0 anywhere is an error.
        private static func repetitionBudget(_ node: Node, _ budget: Int) -> Int {
            switch node {
            case .empty, .scalars, .assertion:
                return budget
            case .concatenation(let nodes), .alternation(let nodes):
                var least = budget
                for node in nodes { least = Swift.min(least, repetitionBudget(node, budget)) }
                return least
            case .repetition(let inner, let min, let max):
                let count = max ?? min
                return repetitionBudget(inner, count > 0 ? budget / count : budget)
            }
        }

        // MARK: Helpers

        func peek(_ offset: Int = 0) -> Unicode.Scalar? {
            let index = position + offset
            return index < pattern.count ? pattern[index] : nil
        }

        func error(_ problem: String, at offset: Int) -> SyntaxError {
            SyntaxError(message: "\(problem) at offset \(offset)")
        }

        /// The pattern text from `start` up to the current position (or `end`), for messages.
        func text(from start: Int, to end: Int? = nil) -> String {
            let end = Swift.min(end ?? position, pattern.count)
            var result = String.UnicodeScalarView()
            if start < end { result.append(contentsOf: pattern[start..<end]) }
            return String(result)
        }

        /// A literal under the current flags: with `(?i)`, the set of its case variants.
        func literal(_ value: UInt32) -> Node {
            .scalars(flags.caseInsensitive ? ScalarSet(value).caseFolded() : ScalarSet(value))
        }

        // MARK: Alternation, concatenation, repetition

        mutating func parseAlternation() throws(SyntaxError) -> Node {
            var branches = [try parseConcatenation()]
            while peek() == "|" {
                position += 1
                branches.append(try parseConcatenation())
            }
            return branches.count == 1 ? branches[0] : .alternation(branches)
        }

        private mutating func parseConcatenation() throws(SyntaxError) -> Node {
            var items: [Node] = []
            // Whether the last token was a repetition operator: RE2 refuses a second one (`a**`). A flag group
            // such as `(?i)` does not reset it.
            var afterRepetition = false
            while let scalar = peek(), scalar != "|", scalar != ")" {
                if try parseRepetition(of: &items, afterRepetition: afterRepetition) {
                    afterRepetition = true
                } else if scalar == "{" {
                    position += 1  // not a valid count: a literal `{`, as in RE2
                    items.append(literal(0x7B))
                    afterRepetition = false
                } else if try parseAtom(into: &items) {
                    afterRepetition = false
                }
            }
            switch items.count {
            case 0: return .empty
            case 1: return items[0]
            default: return .concatenation(items)
            }
        }

        /// At a possible repetition operator (`* + ? {…}`, optionally lazy): applies it to the last item and
        /// returns true, or returns false (position unchanged) if there is no operator here.
        ///
        /// Kept apart from `parseConcatenation` (like every message-building path) so that the recursive chain of
        /// group parsing keeps small stack frames: unoptimised builds reserve frame space for every temporary of a
        /// function, string interpolations included, and nesting depth multiplies it.
        private mutating func parseRepetition(of items: inout [Node], afterRepetition: Bool) throws(SyntaxError) -> Bool {
            let start = position
            let bounds: (min: Int, max: Int?)
            switch peek() {
            case "*": bounds = (0, nil)
            case "+": bounds = (1, nil)
            case "?": bounds = (0, 1)
            case "{":
                guard let count = try parseCount() else { return false }
                bounds = count
            default: return false
            }
            if pattern[start] != "{" { position += 1 }
            if peek() == "?" { position += 1 }  // lazy: same answer
            let operatorText = text(from: start)
            if afterRepetition {
                throw error("bad repetition operator \(operatorText): a repetition cannot follow another", at: start)
            }
            if let max = bounds.max, max < bounds.min {
                throw error("invalid repetition size \(operatorText): the maximum is below the minimum", at: start)
            }
            guard let last = items.popLast() else {
                throw error("missing argument to repetition operator \(operatorText): nothing to repeat", at: start)
            }
            items.append(.repetition(last, min: bounds.min, max: bounds.max))
            return true
        }

        /// At `{`: the bounds of `{n}`, `{n,}` or `{n,m}` and the position moved past it, or nil (position
        /// unchanged) if what follows is not a count, in which case RE2 reads the `{` as a literal. A count above
        /// 1000 is an error. Like RE2, a number with a leading zero (`{01}`) is not a count.
        private mutating func parseCount() throws(SyntaxError) -> (min: Int, max: Int?)? {
            let start = position
            var cursor = position + 1
            func number() -> Int? {
                guard cursor < pattern.count, let first = digit(pattern[cursor]) else { return nil }
                if first == 0, cursor + 1 < pattern.count, digit(pattern[cursor + 1]) != nil { return nil }
                var value = 0
                while cursor < pattern.count, let next = digit(pattern[cursor]) {
                    value = Swift.min(value * 10 + next, 100_000_000)  // saturate: any such count is too big
                    cursor += 1
                }
                return value
            }
            guard let min = number() else { return nil }
            var max: Int? = min
            if cursor < pattern.count, pattern[cursor] == "," {
                cursor += 1
                if cursor < pattern.count, pattern[cursor] == "}" {
                    max = nil
                } else {
                    guard let upper = number() else { return nil }
                    max = upper
                }
            }
            guard cursor < pattern.count, pattern[cursor] == "}" else { return nil }
            position = cursor + 1
            if min > Self.maxRepeat || (max ?? 0) > Self.maxRepeat {
                throw error("invalid repetition size \(text(from: start)): counts above \(Self.maxRepeat) are not allowed",
                            at: start)
            }
            return (min, max)
        }

        private func digit(_ scalar: Unicode.Scalar) -> Int? {
            ("0"..."9").contains(scalar) ? Int(scalar.value - 0x30) : nil
        }

        // MARK: Atoms

        /// Parses one atom and appends what it matches to `items`; false if it appended nothing (a flag group such
        /// as `(?i)`, or an empty `\Q\E`), so that a following repetition applies to the item before, as in RE2.
        private mutating func parseAtom(into items: inout [Node]) throws(SyntaxError) -> Bool {
            guard let scalar = peek() else { return false }
            switch scalar {
            case "(":
                guard let group = try parseGroup() else { return false }
                items.append(group)
            case "[":
                items.append(.scalars(try parseClass()))
            case ".":
                position += 1
                items.append(.scalars(flags.dotAll ? .all : .allButNewline))
            case "^":
                position += 1
                items.append(.assertion(flags.multiLine ? .beginLine : .beginText))
            case "$":
                position += 1
                items.append(.assertion(flags.multiLine ? .endLine : .endText))
            case "\\":
                let count = items.count
                try parseEscape(into: &items)
                return items.count > count
            default:
                position += 1
                items.append(literal(scalar.value))
            }
            return true
        }

        /// At `(`: a group, or nil for a flag group `(?i)` that only changes the flags.
        private mutating func parseGroup() throws(SyntaxError) -> Node? {
            let open = position
            position += 1
            guard peek() == "?" else { return try parseGroupBody(open: open, flags: flags) }
            position += 1
            if let refusal = refusedGroup(open: open) { throw refusal }
            if peek() == "P", peek(1) == "<" {
                position += 2
                try parseGroupName(open: open)
                return try parseGroupBody(open: open, flags: flags)
            }
            if peek() == "<" {
                position += 1
                try parseGroupName(open: open)
                return try parseGroupBody(open: open, flags: flags)
            }
            let (groupFlags, opensGroup) = try parseFlags(open: open)
            guard opensGroup else {
                flags = groupFlags
                return nil
            }
            return try parseGroupBody(open: open, flags: groupFlags)
        }

        /// After `(?`: the error for the group forms RE2 syntax refuses (lookaround and the like), if this is one.
        private func refusedGroup(open: Int) -> SyntaxError? {
            let backtracking = "needs backtracking, which RE2 syntax does not have"
            switch (peek(), peek(1)) {
            case ("=", _), ("!", _):
                return error("lookahead \(text(from: open, to: open + 3)) is not supported: it \(backtracking)", at: open)
            case ("<", "="), ("<", "!"):
                return error("lookbehind \(text(from: open, to: open + 4)) is not supported: it \(backtracking)", at: open)
            case (">", _):
                return error("atomic group (?> is not supported: it \(backtracking)", at: open)
            case ("P", "="):
                return error("backreference (?P= is not supported: it \(backtracking)", at: open)
            case ("P", ">"):
                return error("recursion (?P> is not supported: it \(backtracking)", at: open)
            case ("#", _):
                return error("comment group (?# is not supported by RE2 syntax", at: open)
            default:
                return nil
            }
        }

        /// After `(?P<` or `(?<`: the name and its `>`. Names are word characters, unique in the pattern.
        private mutating func parseGroupName(open: Int) throws(SyntaxError) {
            let nameStart = position
            while let scalar = peek(), scalar != ">" { position += 1 }
            guard peek() == ">" else {
                throw error("invalid named capture group \(text(from: open)): missing >", at: open)
            }
            let name = text(from: nameStart)
            position += 1
            let valid = !name.isEmpty && name.unicodeScalars.allSatisfy {
                $0 == "_" || $0.properties.isAlphabetic || $0.properties.numericType == .decimal
            }
            guard valid else {
                throw error("invalid named capture group name \"\(name)\"", at: open)
            }
            guard groupNames.insert(name).inserted else {
                throw error("duplicate capture group name \"\(name)\"", at: open)
            }
        }

        /// After `(?`: flags `imsU`, optionally `-` and flags to clear, then `)` (the flags hold for the rest of
        /// the enclosing group) or `:` (a non-capturing group with those flags: `opensGroup`). `(?)`, `(?-)`,
        /// `(?i-)` and `(?-:` are errors in RE2; `(?:` is the plain group.
        private mutating func parseFlags(open: Int) throws(SyntaxError) -> (flags: Flags, opensGroup: Bool) {
            var new = flags
            var negated = false
            var sawFlag = false
            while let scalar = peek() {
                position += 1
                switch scalar {
                case "i": new.caseInsensitive = !negated
                case "m": new.multiLine = !negated
                case "s": new.dotAll = !negated
                case "U": new.ungreedy = !negated
                case "-" where !negated:
                    negated = true
                    sawFlag = false
                    continue
                case ":" where !(negated && !sawFlag):
                    return (new, true)
                case ")" where sawFlag:
                    return (new, false)
                default:
                    throw error("invalid or unsupported group syntax \(text(from: open))", at: open)
                }
                sawFlag = true
            }
            throw error("missing ) to close \(text(from: open))", at: open)
        }

        /// The body of a group opened at `open`, up to and including its `)`, parsed under `groupFlags`; the flags
        /// in force before the group come back after it.
        private mutating func parseGroupBody(open: Int, flags groupFlags: Flags) throws(SyntaxError) -> Node {
            depth += 1
            guard depth <= Self.maxNesting else { throw tooDeep(open: open) }
            let saved = flags
            flags = groupFlags
            let node = try parseAlternation()
            guard peek() == ")" else { throw unclosed(open: open) }
            position += 1
            flags = saved
            depth -= 1
            return node
        }

        private func tooDeep(open: Int) -> SyntaxError {
            error("pattern nests too deeply (more than \(Self.maxNesting) groups)", at: open)
        }

        private func unclosed(open: Int) -> SyntaxError {
            error("missing ) to close the ( opened", at: open)
        }
    }
}
