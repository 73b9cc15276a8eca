// Operators, functions, methods and macros: bound at load, with their operand types checked where all are known.
extension CELCompiler {
    private static let comprehensionKinds: [String: CELComprehension.Kind] = [
        "all": .all, "exists": .exists, "exists_one": .existsOne, "map": .map, "filter": .filter,
    ]

    /// `has(x.f)` and the comprehensions; nil when the call is none of them.
    mutating func macro(target: CELSyntax?, name: String, arguments: [CELSyntax], at: Int) throws(CELCompileError) -> Checked? {
        if target == nil, name == "has", arguments.count == 1 {
            guard case .select(let operand, let field, _) = arguments[0] else {
                throw CELCompileError(message: "has() takes a field selection such as has(claims.email)", position: at)
            }
            let checked = try check(operand)
            guard checked.type.isDyn || Self.kindName(checked.type) == "map" else {
                throw CELCompileError(message: "has() needs a map or request, not \(checked.type)", position: at)
            }
            if checked.type == .request {
                guard CELRequestField(rawValue: field) != nil else { throw CELCompileError(message: "request has no field '\(field)'", position: at) }
                return Checked(node: .constant(.bool(true)), type: .bool, cost: 1, size: 0)
            }
            return Checked(node: .has(checked.node, field), type: .bool, cost: checked.cost + 1, size: 0)
        }
        guard let target, let kind = Self.comprehensionKinds[name] else { return nil }
        let arity = kind == .map ? [2, 3] : [2]
        guard arity.contains(arguments.count) else {
            throw CELCompileError(message: "\(name)() takes \(arity.map(String.init).joined(separator: " or ")) arguments", position: at)
        }
        guard case .identifier(let variable, _) = arguments[0] else {
            throw CELCompileError(message: "the first argument of \(name)() is the variable's name", position: at)
        }
        let range = try check(target)
        switch range.type {
        case .dyn, .list, .map, .request: break
        default: throw CELCompileError(message: "\(name)() needs a list or a map, not \(range.type)", position: at)
        }
        let body = try withVariable(variable) { (compiler: inout CELCompiler, slot: Int) throws(CELCompileError) -> (Int, [Checked]) in
            var parts: [Checked] = []
            for argument in arguments.dropFirst() { parts.append(try compiler.check(argument)) }
            return (slot, parts)
        }
        let parts = body.1
        let predicate: Checked? = kind == .map && parts.count == 1 ? nil : parts[0]
        let transform: Checked? = kind == .map ? parts.last : nil
        if let predicate, !predicate.type.admits(.bool) {
            throw CELCompileError(message: "the condition of \(name)() must be bool, not \(predicate.type)", position: at)
        }
        let comprehension = CELComprehension(kind: kind, range: range.node, slot: body.0, predicate: predicate?.node, transform: transform?.node)
        // `list.exists(x, x == c)` is `c in list` (equality never fails, and a map's keys are found by the same
        // equality): one lookup instead of a visit per element, the most common rule there is.
        if kind == .exists, case .equalsConstant(.local(body.0), let constant, negated: false)? = predicate?.node {
            return Checked(node: .membership(.constant(constant), range.node), type: .bool, cost: range.cost + range.size * (parts[0].cost + 1) + 1, size: 0)
        }
        let bodyCost = parts.reduce(0) { $0 + $1.cost }
        let type: CELStaticType
        switch kind {
        case .map: type = .list(transform?.type ?? .dyn)
        case .filter:
            // A list's elements, or a map's keys: a list either way.
            switch range.type {
            case .list: type = range.type
            case .map(let key, _): type = .list(key)
            default: type = .list(.dyn)
            }
        default: type = .bool
        }
        return Checked(node: .comprehension(comprehension), type: type, cost: range.cost + range.size * (bodyCost + 1) + 1,
                       size: kind == .map || kind == .filter ? range.size : 0)
    }

    /// `==` or `!=`, with a constant side folded into the node (either side: equality is symmetric).
    private static func equality(_ left: CELNode, _ right: CELNode, negated: Bool) -> CELNode {
        if case .constant(let constant) = right { return .equalsConstant(left, constant, negated: negated) }
        if case .constant(let constant) = left { return .equalsConstant(right, constant, negated: negated) }
        return .equals(left, right, negated: negated)
    }

    /// `target.name(arguments)`: size, startsWith, endsWith, contains, matches.
    mutating func method(_ name: String, on target: Checked, _ arguments: [Checked], at: Int) throws(CELCompileError) -> Checked {
        switch (name, arguments.count) {
        case ("size", 0):
            return try function("size", [target], at: at)
        case ("startsWith", 1), ("endsWith", 1), ("contains", 1), ("matches", 1):
            return try function(name, [target] + arguments, at: at, receiverStyle: true)
        default:
            throw CELCompileError(message: "unknown method '\(name)' with \(arguments.count) argument(s)", position: at)
        }
    }

    /// Operators (by their internal names) and global functions.
    /// - Parameter receiverStyle: called as a method; `startsWith`, `endsWith` and `contains` exist only so.
    mutating func function(_ name: String, _ arguments: [Checked], at: Int, receiverStyle: Bool = false) throws(CELCompileError) -> Checked {
        let types = arguments.map(\.type)
        let operandCost = arguments.reduce(0) { $0 + $1.cost }
        func make(_ node: CELNode, _ type: CELStaticType, extra: Double = 0, size: Double = 0) -> Checked {
            Checked(node: node, type: type, cost: operandCost + 1 + extra, size: size)
        }
        func refuse(_ what: String) -> CELCompileError {
            CELCompileError(message: "no matching overload for \(what) applied to (\(types.map(\.description).joined(separator: ", ")))", position: at)
        }
        func requireAll(_ allowed: Set<String>) throws(CELCompileError) {
            guard types.allSatisfy({ $0.isDyn || allowed.contains(Self.kindName($0)) }) else { throw refuse("'\(name)'") }
        }
        switch (name, arguments.count) {
        case ("_&&_", 2), ("_||_", 2):
            try requireAll(["bool"])
            return make(name == "_&&_" ? .and(arguments[0].node, arguments[1].node) : .or(arguments[0].node, arguments[1].node), .bool)
        case ("!_", 1):
            try requireAll(["bool"])
            return make(.not(arguments[0].node), .bool)
        case ("-_", 1):
            try requireAll(["int", "double"])
            return make(.negate(arguments[0].node), types[0])
        case ("_?_:_", 3):
            guard types[0].admits(.bool) else { throw refuse("'?:' condition") }
            let branch = max(arguments[1].cost, arguments[2].cost)
            return Checked(node: .conditional(arguments[0].node, arguments[1].node, arguments[2].node),
                           type: types[1] == types[2] ? types[1] : .dyn, cost: arguments[0].cost + branch + 1,
                           size: max(arguments[1].size, arguments[2].size))
        case ("_==_", 2), ("_!=_", 2):
            return make(Self.equality(arguments[0].node, arguments[1].node, negated: name == "_!=_"), .bool,
                        extra: CELCost.reading(min(arguments[0].size, arguments[1].size)))
        case ("_<_", 2), ("_<=_", 2), ("_>_", 2), ("_>=_", 2):
            let ordering = CELOrdering(rawValue: String(name.dropFirst().dropLast()))!  // safe: the four names above
            if !types.contains(where: \.isDyn) {
                let numeric = types.allSatisfy(\.isNumeric)
                guard numeric || (types[0] == types[1] && [.string, .bytes, .bool].contains(types[0])) else { throw refuse("'\(ordering.rawValue)'") }
            }
            let node: CELNode
            if case .constant(let constant) = arguments[1].node {
                node = .orderingConstant(ordering, arguments[0].node, constant)
            } else {
                node = .ordering(ordering, arguments[0].node, arguments[1].node)
            }
            return make(node, .bool, extra: CELCost.reading(min(arguments[0].size, arguments[1].size)))
        case ("@in", 2):
            switch types[1] {
            case .dyn, .list, .map, .request: break
            default: throw refuse("'in'")
            }
            return make(.membership(arguments[0].node, arguments[1].node), .bool, extra: arguments[1].size)
        case ("_+_", 2), ("_-_", 2), ("_*_", 2), ("_/_", 2), ("_%_", 2):
            return try arithmetic(name, arguments, at: at, refuse: refuse)
        case ("size", 1):
            try requireAll(["string", "bytes", "list", "map"])
            return make(.function(.size, arguments.map(\.node)), .int, extra: CELCost.reading(arguments[0].size))
        case ("startsWith", 2) where receiverStyle, ("endsWith", 2) where receiverStyle, ("contains", 2) where receiverStyle:
            try requireAll(["string"])
            return make(.function(CELFunction(rawValue: name)!, arguments.map(\.node)), .bool, extra: CELCost.reading(arguments[0].size))  // safe: named above
        case ("matches", 2):
            try requireAll(["string"])
            // A literal pattern only: compiled and checked (RE2 syntax, no backtracking) once, at load.
            guard case .constant(.string(let pattern)) = arguments[1].node else {
                throw CELCompileError(message: "the pattern of matches() must be a literal string (it is compiled and checked at load)", position: at)
            }
            let regex: LinearRegex
            do {
                regex = try LinearRegex(pattern)
            } catch {
                throw CELCompileError(message: "invalid pattern: \(error.message)", position: at)
            }
            return make(.matches(arguments[0].node, regex), .bool, extra: CELCost.reading(arguments[0].size * Double(regex.programSize)))
        default:
            return try conversion(name, arguments, at: at, refuse: refuse)
        }
    }

    private func arithmetic(
        _ name: String, _ arguments: [Checked], at: Int, refuse: (String) -> CELCompileError
    ) throws(CELCompileError) -> Checked {
        let operation = CELArithmetic(rawValue: String(name.dropFirst().dropLast()))!  // safe: the five names of the caller
        let types = arguments.map(\.type)
        var type: CELStaticType = .dyn
        if let known = types.first(where: { !$0.isDyn }) {
            let allowed: Bool
            switch known {
            case .int, .uint: allowed = true
            case .double: allowed = operation != .remainder
            case .string, .bytes, .list: allowed = operation == .add
            default: allowed = false
            }
            let same = types.allSatisfy { $0.isDyn || Self.kindName($0) == Self.kindName(known) }
            guard allowed && same else { throw refuse("'\(operation.rawValue)'") }
            type = Self.kindName(known) == "list" ? .list(.dyn) : known
        }
        let joins = operation == .add && (type == .dyn || [.string, .bytes].contains(type) || Self.kindName(type) == "list")
        let size = joins ? arguments[0].size + arguments[1].size : 0
        return Checked(node: .arithmetic(operation, arguments[0].node, arguments[1].node), type: type,
                       cost: arguments[0].cost + arguments[1].cost + 1 + (joins ? CELCost.reading(size) : 0), size: size)
    }

    /// `int`, `uint`, `double`, `string`, `bytes`, `bool`, `dyn`, `type`.
    private func conversion(
        _ name: String, _ arguments: [Checked], at: Int, refuse: (String) -> CELCompileError
    ) throws(CELCompileError) -> Checked {
        let accepted: [String: (Set<String>, CELStaticType)] = [
            "int": (["int", "uint", "double", "string"], .int),
            "uint": (["int", "uint", "double", "string"], .uint),
            "double": (["int", "uint", "double", "string"], .double),
            "string": (["int", "uint", "double", "bool", "string", "bytes"], .string),
            "bytes": (["string", "bytes"], .bytes),
            "bool": (["bool", "string"], .bool),
        ]
        guard let function = CELFunction(rawValue: name), arguments.count == 1 else {
            let known = CELFunction(rawValue: name) != nil || ["has"].contains(name)
            throw CELCompileError(
                message: known ? "\(name)() takes one argument" : "unknown function '\(name)' with \(arguments.count) argument(s)", position: at)
        }
        let argument = arguments[0]
        let type: CELStaticType
        switch function {
        case .dyn: type = .dyn
        case .type: type = .type
        default:
            guard let (allowed, result) = accepted[name] else { throw refuse("'\(name)'") }
            guard argument.type.isDyn || allowed.contains(Self.kindName(argument.type)) else { throw refuse("'\(name)'") }
            type = result
        }
        return Checked(node: function == .dyn ? argument.node : .function(function, [argument.node]), type: type,
                       cost: argument.cost + 1 + CELCost.reading(argument.size), size: argument.size)
    }

    /// A static type's kind: `list(int)` and `list(dyn)` are both `list`; the request is a `map`.
    static func kindName(_ type: CELStaticType) -> String {
        switch type {
        case .list: "list"
        case .map, .request: "map"
        default: type.description
        }
    }
}
