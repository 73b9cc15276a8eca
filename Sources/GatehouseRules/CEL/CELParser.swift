/// CEL's grammar (cel-spec langdef "Syntax") by recursive descent, into `CELSyntax`. Operators become calls of
/// their internal names (`_&&_`, `_==_`, `!_`, `-_`, `@in`, `_?_:_`, `_[_]` is `.index`), as in the spec.
struct CELParser {
    /// Deeper nesting than this is refused (a rule is a line or two; the limit keeps the parser's stack small).
    static let maxDepth = 64

    private let tokens: [(token: CELToken, at: Int)]
    private var position = 0
    private var depth = 0

    static func parse(_ source: String) throws(CELCompileError) -> CELSyntax {
        var parser = CELParser(tokens: try CELLexer.tokens(source))
        let expression = try parser.expression()
        guard parser.current == .end else { throw parser.error("unexpected \(parser.describe(parser.current))") }
        return expression
    }

    private init(tokens: [(token: CELToken, at: Int)]) {
        self.tokens = tokens
    }

    private var current: CELToken { tokens[position].token }
    private var at: Int { tokens[position].at }

    private func error(_ message: String) -> CELCompileError { CELCompileError(message: message, position: at) }

    private func describe(_ token: CELToken) -> String {
        switch token {
        case .end: "end of expression"
        case .symbol(let symbol): "'\(symbol)'"
        case .identifier(let name): "'\(name)'"
        default: "literal"
        }
    }

    private mutating func accept(_ symbol: String) -> Bool {
        guard current == .symbol(symbol) else { return false }
        position += 1
        return true
    }

    private mutating func expect(_ symbol: String) throws(CELCompileError) {
        guard accept(symbol) else { throw error("expected '\(symbol)', found \(describe(current))") }
    }

    private mutating func nested() throws(CELCompileError) {
        depth += 1
        if depth > Self.maxDepth { throw error("nested more than \(Self.maxDepth) deep") }
    }

    // MARK: Operators, lowest precedence first

    private mutating func expression() throws(CELCompileError) -> CELSyntax {
        try nested()
        defer { depth -= 1 }
        let condition = try binary(level: 0)
        let start = at
        guard accept("?") else { return condition }
        let then = try binary(level: 0)
        try expect(":")
        let otherwise = try expression()
        return .call(target: nil, name: "_?_:_", arguments: [condition, then, otherwise], at: start)
    }

    /// The binary levels: `||`, `&&`, relations, `+ -`, `* / %`; each left-associative.
    private static let levels: [[String: String]] = [
        ["||": "_||_"],
        ["&&": "_&&_"],
        ["==": "_==_", "!=": "_!=_", "<": "_<_", "<=": "_<=_", ">": "_>_", ">=": "_>=_", "in": "@in"],
        ["+": "_+_", "-": "_-_"],
        ["*": "_*_", "/": "_/_", "%": "_%_"],
    ]

    private mutating func binary(level: Int) throws(CELCompileError) -> CELSyntax {
        guard level < Self.levels.count else { return try unary() }
        var left = try binary(level: level + 1)
        while true {
            let spelling: String
            switch current {
            case .symbol(let symbol): spelling = symbol
            case .identifier("in"): spelling = "in"
            default: return left
            }
            guard let name = Self.levels[level][spelling] else { return left }
            let start = at
            position += 1
            let right = try binary(level: level + 1)
            left = .call(target: nil, name: name, arguments: [left, right], at: start)
        }
    }

    private mutating func unary() throws(CELCompileError) -> CELSyntax {
        let start = at
        if accept("!") {
            try nested()
            defer { depth -= 1 }
            return .call(target: nil, name: "!_", arguments: [try unary()], at: start)
        }
        if accept("-") {
            try nested()
            defer { depth -= 1 }
            // A minus before a number is part of the literal (`-9223372036854775808` is an int).
            switch current {
            case .int(let value):
                position += 1
                return try member(.literal(.int(-value), at: start))
            case .intMagnitude:
                position += 1
                return try member(.literal(.int(Int64.min), at: start))
            case .double(let value):
                position += 1
                return try member(.literal(.double(-value), at: start))
            default:
                return .call(target: nil, name: "-_", arguments: [try unary()], at: start)
            }
        }
        return try member(try primary())
    }

    // MARK: Members and primaries

    private mutating func member(_ operand: CELSyntax) throws(CELCompileError) -> CELSyntax {
        var result = operand
        while true {
            let start = at
            if accept(".") {
                guard case .identifier(let name) = current, name != "in" else { throw error("expected a field or method name after '.'") }
                position += 1
                if accept("(") {
                    result = .call(target: result, name: name, arguments: try arguments(closing: ")"), at: start)
                } else {
                    result = .select(result, field: name, at: start)
                }
            } else if accept("[") {
                let index = try expression()
                try expect("]")
                result = .index(result, index, at: start)
            } else {
                return result
            }
        }
    }

    private mutating func primary() throws(CELCompileError) -> CELSyntax {
        let start = at
        let token = current
        position += 1
        switch token {
        case .int(let value): return .literal(.int(value), at: start)
        case .uint(let value): return .literal(.uint(value), at: start)
        case .double(let value): return .literal(.double(value), at: start)
        case .string(let value): return .literal(.string(value), at: start)
        case .bytes(let value): return .literal(.bytes(value), at: start)
        case .intMagnitude:
            position -= 1
            throw error("integer literal out of range")
        case .identifier("true"): return .literal(.bool(true), at: start)
        case .identifier("false"): return .literal(.bool(false), at: start)
        case .identifier("null"): return .literal(.null, at: start)
        case .identifier("in"):
            position -= 1
            throw error("unexpected 'in'")
        case .identifier(let name):
            if accept("(") { return .call(target: nil, name: name, arguments: try arguments(closing: ")"), at: start) }
            if current == .symbol("{") { throw error("message construction (\(name){…}) is not supported: there are no message types") }
            return .identifier(name, at: start)
        case .symbol("."):
            throw error("names from the root namespace (.name) are not supported")
        case .symbol("("):
            let inner = try expression()
            try expect(")")
            return inner
        case .symbol("["):
            return .list(try arguments(closing: "]"), at: start)
        case .symbol("{"):
            return .map(try entries(), at: start)
        default:
            position -= 1
            throw error("unexpected \(describe(token))")
        }
    }

    /// Comma-separated expressions up to `closing`, a trailing comma allowed in lists and maps.
    private mutating func arguments(closing: String) throws(CELCompileError) -> [CELSyntax] {
        var result: [CELSyntax] = []
        if accept(closing) { return result }
        while true {
            result.append(try expression())
            if accept(closing) { return result }
            try expect(",")
            if closing == "]", accept(closing) { return result }
        }
    }

    private mutating func entries() throws(CELCompileError) -> [(key: CELSyntax, value: CELSyntax)] {
        var result: [(key: CELSyntax, value: CELSyntax)] = []
        if accept("}") { return result }
        while true {
            let key = try expression()
            try expect(":")
            result.append((key, try expression()))
            if accept("}") { return result }
            try expect(",")
            if accept("}") { return result }
        }
    }
}
