/// Turns parsed syntax into a `CELNode`: resolves names (`claims`, `request`, type names, comprehension variables),
/// binds operators, functions and macros, refuses at load what can only fail (an unknown name or function, an
/// operator whose operand types are all known and fit no overload), and estimates the expression's worst cost
/// (`CELCost`).
struct CELCompiler {
    /// An expression deeper than this is refused (the evaluator recurses once per level).
    static let maxDepth = 100

    /// A checked node with what the check knows of it.
    struct Checked {
        let node: CELNode
        let type: CELStaticType
        /// Worst-case cost units (`CELCost`).
        let cost: Double
        /// Upper bound of the value's length: elements of a list or map, UTF-8 bytes of a string.
        let size: Double
    }

    let cost: CELCost
    /// Whether `request` is declared (a header value reads only claims).
    let readsRequest: Bool
    private var scopes: [(name: String, slot: Int)] = []
    private(set) var slotCount = 0
    /// The expression names `mcp` (its evaluation needs the message's arguments as values).
    private(set) var readsMCP = false
    private var depth = 0

    init(cost: CELCost, readsRequest: Bool = true) {
        self.cost = cost
        self.readsRequest = readsRequest
    }

    static let typeNames: [String: CELType] = Dictionary(uniqueKeysWithValues: CELType.allCases.map { ($0.rawValue, $0) })

    mutating func check(_ syntax: CELSyntax) throws(CELCompileError) -> Checked {
        depth += 1
        defer { depth -= 1 }
        guard depth <= Self.maxDepth else { throw CELCompileError(message: "nested more than \(Self.maxDepth) deep", position: syntax.position) }
        switch syntax {
        case .literal(let value, _):
            return Checked(node: .constant(value), type: CELStaticType(of: value), cost: 0, size: Self.literalSize(value))
        case .identifier(let name, let at):
            let checked = try identifier(name, at: at)
            if case .mcp = checked.node { readsMCP = true }
            return checked
        case .select(let operand, let field, let at):
            return try select(try check(operand), field: field, at: at)
        case .index(let operand, let index, let at):
            return try self.index(try check(operand), try check(index), at: at)
        case .list(let elements, _):
            var checked: [Checked] = []
            for element in elements { checked.append(try check(element)) }
            let elementType = Self.common(checked.map(\.type))
            return Checked(node: .list(checked.map(\.node)), type: .list(elementType), cost: 1 + checked.reduce(0) { $0 + $1.cost },
                           size: Double(checked.count))
        case .map(let entries, _):
            var keys: [Checked] = [], values: [Checked] = []
            for entry in entries {
                let key = try check(entry.key)
                if !key.type.isDyn && ![.int, .uint, .bool, .string].contains(key.type) {
                    throw CELCompileError(message: "a map key must be int, uint, bool or string, not \(key.type)", position: entry.key.position)
                }
                keys.append(key)
                values.append(try check(entry.value))
            }
            return Checked(node: .map(keys: keys.map(\.node), values: values.map(\.node)),
                           type: .map(Self.common(keys.map(\.type)), Self.common(values.map(\.type))),
                           cost: 1 + (keys + values).reduce(0) { $0 + $1.cost }, size: Double(keys.count))
        case .call(let target, let name, let arguments, let at):
            if let macro = try self.macro(target: target, name: name, arguments: arguments, at: at) { return macro }
            var checked: [Checked] = []
            for argument in arguments { checked.append(try check(argument)) }
            if let target { return try method(name, on: try check(target), checked, at: at) }
            return try function(name, checked, at: at)
        }
    }

    private func identifier(_ name: String, at: Int) throws(CELCompileError) -> Checked {
        if let local = scopes.last(where: { $0.name == name }) {
            return Checked(node: .local(local.slot), type: .dyn, cost: 1, size: cost.elementSize)
        }
        switch name {
        case "claims":
            return Checked(node: .claims, type: .map(.string, .dyn), cost: 1, size: cost.collectionBound)
        case "request" where readsRequest:
            return Checked(node: .request, type: .request, cost: 1, size: Double(CELRequestField.allCases.count))
        case "mcp" where readsRequest:
            // Its arguments are as large as the largest message a resource reads (`max_message_bytes`).
            return Checked(node: .mcp, type: .map(.string, .dyn), cost: 1, size: cost.messageBound)
        default:
            if let type = Self.typeNames[name] { return Checked(node: .constant(.type(type)), type: .type, cost: 0, size: 0) }
            let variables = readsRequest ? "the variables are claims, request and mcp" : "a header value reads only claims"
            throw CELCompileError(message: "undeclared reference to '\(name)' (\(variables))", position: at)
        }
    }

    private func select(_ operand: Checked, field: String, at: Int) throws(CELCompileError) -> Checked {
        switch operand.type {
        case .request:
            guard let requestField = CELRequestField(rawValue: field) else {
                let fields = CELRequestField.allCases.map(\.rawValue).joined(separator: ", ")
                throw CELCompileError(message: "request has no field '\(field)' (it has \(fields))", position: at)
            }
            let type: CELStaticType = requestField == .headers ? .map(.string, .string) : .string
            return Checked(node: .requestField(requestField), type: type, cost: 1, size: cost.collectionBound)
        case .map(_, let value):
            return Checked(node: .select(operand.node, field), type: value, cost: operand.cost + 1, size: partSize(of: operand))
        case .dyn:
            return Checked(node: .select(operand.node, field), type: .dyn, cost: operand.cost + 1, size: partSize(of: operand))
        default:
            throw CELCompileError(message: "\(operand.type) has no fields (selecting '\(field)')", position: at)
        }
    }

    private func index(_ operand: Checked, _ index: Checked, at: Int) throws(CELCompileError) -> Checked {
        let type: CELStaticType
        switch operand.type {
        case .list(let element):
            guard index.type.isDyn || index.type.isNumeric else {
                throw CELCompileError(message: "a list is indexed by a number, not \(index.type)", position: at)
            }
            type = element
        case .map(_, let value): type = value
        case .dyn: type = .dyn
        default: throw CELCompileError(message: "\(operand.type) cannot be indexed", position: at)
        }
        return Checked(node: .index(operand.node, index.node), type: type, cost: operand.cost + index.cost + 1, size: partSize(of: operand))
    }

    /// A part of the token or the request may be as long as the whole; a part of a comprehension's element counts
    /// as the element does (`CELCost.elementSize`).
    private func partSize(of operand: Checked) -> Double {
        operand.size >= cost.wholeBound ? operand.size : min(operand.size, cost.elementSize)
    }

    /// The one type of all these, or `dyn`.
    static func common(_ types: [CELStaticType]) -> CELStaticType {
        guard let first = types.first, types.allSatisfy({ $0 == first }) else { return .dyn }
        return first
    }

    private static func literalSize(_ value: CELValue) -> Double {
        switch value {
        case .string(let text): Double(text.utf8.count)
        case .bytes(let bytes): Double(bytes.count)
        default: 0
        }
    }

    // MARK: Comprehension variables

    /// Runs `body` with `name` bound to a new slot.
    mutating func withVariable<T>(_ name: String, _ body: (inout CELCompiler, Int) throws(CELCompileError) -> T) throws(CELCompileError) -> T {
        let slot = slotCount
        slotCount += 1
        scopes.append((name, slot))
        defer { scopes.removeLast() }
        return try body(&self, slot)
    }
}
