extension LinearRegex {
    /// One search of a text: the classic two-list simulation of the program's NFA.
    ///
    /// `current` holds the states alive before the scalar at hand, `next` those alive after it; each state is in a
    /// list at most once, so the work per scalar is at most the program's size. The search is unanchored by
    /// re-entering the start state at every position (as if the pattern began with a lazy `.*`), and it stops at
    /// the first state that reaches `match`: only the yes/no answer is wanted.
    ///
    /// The lists and the closure stack live in one block allocated per search and are reused at every position,
    /// so the scan itself allocates nothing. They are raw pointers rather than arrays because the tests (and so the
    /// CI's time limits) run unoptimised builds, where every array access pays for reference counting and
    /// uniqueness checks; all indices are program counters, which the compiler guarantees are within the program.
    struct Scan {
        private let instructions: UnsafeBufferPointer<Instruction>
        private let ranges: UnsafeBufferPointer<ClosedRange<UInt32>>
        private let anchoredAtStart: Bool
        /// Four lists' worth (two dense, two sparse arrays) plus the stack, each `instructions.count` long.
        private let memory: UnsafeMutablePointer<Int>

        init(instructions: UnsafeBufferPointer<Instruction>, ranges: UnsafeBufferPointer<ClosedRange<UInt32>>,
             anchoredAtStart: Bool) {
            self.instructions = instructions
            self.ranges = ranges
            self.anchoredAtStart = anchoredAtStart
            let size = instructions.count * 5
            memory = UnsafeMutablePointer<Int>.allocate(capacity: size)
            memory.initialize(repeating: 0, count: size)
        }

        func deallocate() { memory.deallocate() }

        func search(_ text: String, start: Int) -> Bool {
            let size = instructions.count
            var current = StateList(dense: memory, sparse: memory + size)
            var next = StateList(dense: memory + 2 * size, sparse: memory + 3 * size)

            var scalars = text.unicodeScalars.makeIterator()
            var previous = Context.none
            var scalar = scalars.next()?.value ?? Context.none
            var atStart = true
            while true {
                if atStart || !anchoredAtStart {
                    let context = Context(previous: previous, next: scalar)
                    if addClosure(of: start, to: &current, context: context) { return true }
                } else if current.count == 0 {
                    return false  // anchored at the start and every thread has died: nothing can match later
                }
                guard scalar != Context.none else { return false }

                let following = scalars.next()?.value ?? Context.none
                let context = Context(previous: scalar, next: following)
                next.count = 0
                var index = 0
                while index < current.count {
                    let pc = current.dense[index]
                    if consumes(pc, scalar), addClosure(of: pc + 1, to: &next, context: context) { return true }
                    index += 1
                }
                swap(&current, &next)
                previous = scalar
                scalar = following
                atStart = false
            }
        }

        /// Adds `pc` and every state reachable from it without consuming a scalar (splits, jumps, assertions that
        /// hold in `context`) to `list`; true as soon as `match` is reached. Iterative with an explicit stack, since
        /// a chain of splits can be as long as the program; a state is pushed only when first inserted, so the
        /// stack never holds more than the program's size.
        private func addClosure(of pc: Int, to list: inout StateList, context: Context) -> Bool {
            guard !list.contains(pc) else { return false }
            list.insert(pc)
            let stack = memory + 4 * instructions.count
            stack[0] = pc
            var depth = 1
            while depth > 0 {
                depth -= 1
                let pc = stack[depth]
                var targets = (-1, -1)
                switch instructions[pc] {
                case .match: return true
                case .jump(let target): targets.0 = target
                case .split(let first, let second): targets = (second, first)
                case .assert(let assertion): if context.satisfies(assertion) { targets.0 = pc + 1 }
                case .scalar, .ranges, .any, .anyButNewline: break  // waits in the list for the next scalar
                }
                if targets.0 >= 0, !list.contains(targets.0) {
                    list.insert(targets.0)
                    stack[depth] = targets.0
                    depth += 1
                }
                if targets.1 >= 0, !list.contains(targets.1) {
                    list.insert(targets.1)
                    stack[depth] = targets.1
                    depth += 1
                }
            }
            return false
        }

        /// Whether the instruction at `pc` consumes `scalar` (false for the non-consuming ones).
        private func consumes(_ pc: Int, _ scalar: UInt32) -> Bool {
            switch instructions[pc] {
            case .scalar(let value): return value == scalar
            case .any: return true
            case .anyButNewline: return scalar != 0x0A
            case .ranges(let start, let count): return classContains(scalar, start: start, count: count)
            case .match, .jump, .split, .assert: return false
            }
        }

        /// Whether `scalar` is in the class at `ranges[start ..< start + count]` (sorted, disjoint): a linear scan
        /// for the short classes most patterns have, a binary search otherwise.
        private func classContains(_ scalar: UInt32, start: Int, count: Int) -> Bool {
            if count <= 4 {
                var index = start
                while index < start + count {
                    if ranges[index].contains(scalar) { return true }
                    index += 1
                }
                return false
            }
            var low = start
            var high = start + count
            while low < high {
                let middle = low + (high - low) / 2
                let range = ranges[middle]
                if scalar < range.lowerBound {
                    high = middle
                } else if scalar > range.upperBound {
                    low = middle + 1
                } else {
                    return true
                }
            }
            return false
        }
    }

    /// A set of program counters with O(1) insert and membership, iterated in insertion order, and cleared by
    /// resetting `count` (Briggs & Torczon): `sparse[pc]` points into `dense` and is trusted only if `dense`
    /// points back, so stale entries need no wiping however large the program.
    struct StateList {
        let dense: UnsafeMutablePointer<Int>
        let sparse: UnsafeMutablePointer<Int>
        var count = 0

        func contains(_ pc: Int) -> Bool {
            let slot = sparse[pc]
            return slot < count && dense[slot] == pc
        }

        mutating func insert(_ pc: Int) {
            sparse[pc] = count
            dense[count] = pc
            count += 1
        }
    }

    /// The scalars either side of a position, which is all an assertion looks at; `none` stands for the text's
    /// start or end (a value no scalar has).
    struct Context {
        static let none: UInt32 = .max
        let previous: UInt32
        let next: UInt32

        func satisfies(_ assertion: Assertion) -> Bool {
            switch assertion {
            case .beginText: return previous == Self.none
            case .endText: return next == Self.none
            case .beginLine: return previous == Self.none || previous == 0x0A
            case .endLine: return next == Self.none || next == 0x0A
            case .wordBoundary: return Self.isWord(previous) != Self.isWord(next)
            case .notWordBoundary: return Self.isWord(previous) == Self.isWord(next)
            }
        }

        /// RE2's `\b` is ASCII-only: `[0-9A-Za-z_]`.
        private static func isWord(_ value: UInt32) -> Bool {
            switch value {
            case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x5F: return true
            default: return false
            }
        }
    }
}
