extension LinearRegex {
    /// Turns a `Node` tree into a Thompson NFA `Program` (Thompson 1968, in the style of RE2's and Pike's).
    ///
    /// Counted repetitions are expanded (`x{2,4}` is `xx(x(x)?)?`), which is what makes them cost program size: the
    /// size limit is checked on every emitted instruction, so `(a{1000}){1000}` is refused after `limit`
    /// instructions instead of after a million.
    struct Compiler {
        private var instructions: [Instruction] = []
        private var ranges: [ClosedRange<UInt32>] = []
        /// Where each class already stored in `ranges` starts: a class repeated by `{n}` is stored once.
        private var stored: [ScalarSet: Int] = [:]
        private let limit: Int

        private init(limit: Int) { self.limit = limit }

        static func compile(_ node: Node, limit: Int) throws(SyntaxError) -> Program {
            var compiler = Compiler(limit: limit)
            try compiler.compile(node)
            _ = try compiler.emit(.match)
            return Program(
                instructions: compiler.instructions, ranges: compiler.ranges, start: 0,
                anchoredAtStart: Self.isAnchoredAtStart(node))
        }

        /// Whether every match must start at the text's start: the pattern begins with `\A` (or a non-multi-line
        /// `^`) on every path. A conservative check of the common `^…` shapes; false merely forgoes an early exit.
        private static func isAnchoredAtStart(_ node: Node) -> Bool {
            switch node {
            case .assertion(let assertion): return assertion == .beginText
            case .concatenation(let nodes): return nodes.first.map(isAnchoredAtStart) ?? false
            case .alternation(let nodes): return !nodes.isEmpty && nodes.allSatisfy(isAnchoredAtStart)
            case .repetition(let inner, let min, _): return min > 0 && isAnchoredAtStart(inner)
            case .empty, .scalars: return false
            }
        }

        private mutating func emit(_ instruction: Instruction) throws(SyntaxError) -> Int {
            guard instructions.count < limit else {
                throw SyntaxError(message: "pattern too large: its program would exceed \(limit) instructions "
                    + "(large or nested counted repetitions such as (a{100}){100} multiply its size)")
            }
            instructions.append(instruction)
            return instructions.count - 1
        }

        private mutating func patch(_ pc: Int, _ instruction: Instruction) { instructions[pc] = instruction }

        private mutating func compile(_ node: Node) throws(SyntaxError) {
            switch node {
            case .empty:
                break
            case .scalars(let set):
                _ = try emit(consuming(set))
            case .assertion(let assertion):
                _ = try emit(.assert(assertion))
            case .concatenation(let nodes):
                for node in nodes { try compile(node) }
            case .alternation(let branches):
                // split L1, next; L1: branch; jump end; next: split L2, next'; …; last branch; end:
                var jumps: [Int] = []
                for (index, branch) in branches.enumerated() {
                    if index == branches.count - 1 {
                        try compile(branch)
                    } else {
                        let split = try emit(.split(0, 0))
                        try compile(branch)
                        jumps.append(try emit(.jump(0)))
                        patch(split, .split(split + 1, instructions.count))
                    }
                }
                for jump in jumps { patch(jump, .jump(instructions.count)) }
            case .repetition(let inner, let min, let max):
                try compileRepetition(inner, min: min, max: max)
            }
        }

        private mutating func compileRepetition(_ inner: Node, min: Int, max: Int?) throws(SyntaxError) {
            guard let max else {
                if min == 0 {
                    // x*: loop: split body, end; body: x; jump loop; end:
                    let loop = try emit(.split(0, 0))
                    try compile(inner)
                    _ = try emit(.jump(loop))
                    patch(loop, .split(loop + 1, instructions.count))
                } else {
                    // x{n,}: n-1 copies, then x+ (body: x; split body, end)
                    for _ in 0..<(min - 1) { try compile(inner) }
                    let body = instructions.count
                    try compile(inner)
                    _ = try emit(.split(body, instructions.count + 1))
                }
                return
            }
            for _ in 0..<min { try compile(inner) }
            guard max > min else { return }
            // The optional copies nest: each may be skipped straight to the end.
            var splits: [Int] = []
            for _ in min..<max {
                splits.append(try emit(.split(0, 0)))
                try compile(inner)
            }
            for split in splits { patch(split, .split(split + 1, instructions.count)) }
        }

        /// The consuming instruction for a set: the specialised forms for one scalar and for `.`, else the ranges.
        private mutating func consuming(_ set: ScalarSet) -> Instruction {
            if set.ranges.count == 1, let only = set.ranges.first, only.lowerBound == only.upperBound {
                return .scalar(only.lowerBound)
            }
            if set == .all { return .any }
            if set == .allButNewline { return .anyButNewline }
            if let start = stored[set] { return .ranges(start: start, count: set.ranges.count) }
            let start = ranges.count
            ranges.append(contentsOf: set.ranges)
            stored[set] = start
            return .ranges(start: start, count: set.ranges.count)
        }
    }
}
