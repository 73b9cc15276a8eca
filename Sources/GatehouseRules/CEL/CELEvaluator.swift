/// Runs a checked expression over one activation, counting cost units (`CELCost`) and stopping at the limit.
///
/// CEL's error values are Swift errors here; `&&`, `||`, `?:` and the macros `all` and `exists` absorb them where
/// the cel-spec says (an error on one side of `&&` and `false` on the other is `false`, commutatively).
struct CELEvaluator {
    let activation: CELActivation
    /// One initialized slot per comprehension variable, owned by the caller for the evaluation.
    private let locals: UnsafeMutableBufferPointer<CELValue>
    private(set) var budget: Int

    init(_ activation: CELActivation, locals: UnsafeMutableBufferPointer<CELValue>, limit: Int) {
        self.activation = activation
        self.locals = locals
        budget = limit
    }

    mutating func spend(_ units: Int) throws(CELEvaluationError) {
        budget -= units
        if budget < 0 { throw CELEvaluationError(message: "cost limit exceeded", isCostLimit: true) }
    }

    mutating func evaluate(_ node: CELNode) throws(CELEvaluationError) -> CELValue {
        try spend(1)
        switch node {
        case .constant(let value): return value
        case .claims: return .map(.json(activation.claims))
        case .request: return activation.request
        case .mcp: return activation.mcpValue
        case .requestField(let field): return activation.value(of: field)
        case .local(let slot): return locals[slot]
        case .select(.claims, let field):
            // A claim: looked up in the token's object directly.
            guard let found = activation.claims[field] else { throw CELEvaluationError(message: "no such key: \(field)") }
            return CELValue(json: found)
        case .select(let operand, let field):
            let value = try evaluate(operand)
            guard case .map(let map) = value else { throw CELEvaluationError(message: "no such field '\(field)' on \(value.type.rawValue)") }
            guard let found = map.value(at: .string(field)) else { throw CELEvaluationError(message: "no such key: \(field)") }
            return found
        case .has(let operand, let field):
            let value = try evaluate(operand)
            guard case .map(let map) = value else { throw CELEvaluationError(message: "has() on \(value.type.rawValue)") }
            return .bool(map.value(at: .string(field)) != nil)
        case .index(let operand, let index):
            return try CELOperations.index(try evaluate(operand), try evaluate(index))
        case .list(let elements):
            var values: [CELValue] = []
            values.reserveCapacity(elements.count)
            for element in elements { values.append(try evaluate(element)) }
            return .list(.values(values))
        case .map(let keys, let values):
            var entries = CELMapEntries()
            for (key, value) in zip(keys, values) {
                let evaluatedKey = try evaluate(key)
                guard entries.insert(evaluatedKey, try evaluate(value)) else {
                    throw CELEvaluationError(message: "a map key twice, or of a type no key has (\(evaluatedKey.type.rawValue))")
                }
            }
            return .map(.entries(entries))
        case .and(let left, let right):
            return try logical(left, right, absorbing: false)
        case .or(let left, let right):
            return try logical(left, right, absorbing: true)
        case .not(let operand):
            let value = try evaluate(operand)
            guard case .bool(let flag) = value else { throw .noOverload("!", value) }
            return .bool(!flag)
        case .conditional(let condition, let then, let otherwise):
            let value = try evaluate(condition)
            guard case .bool(let flag) = value else { throw .noOverload("?:", value) }
            return try evaluate(flag ? then : otherwise)
        case .negate(let operand):
            return try CELOperations.negate(try evaluate(operand))
        case .arithmetic(let operation, let left, let right):
            let lhs = try evaluate(left), rhs = try evaluate(right)
            try spend(CELOperations.joinCost(lhs, rhs, operation))
            return try CELOperations.arithmetic(operation, lhs, rhs)
        case .equals(let left, let right, let negated):
            let lhs = try evaluate(left), rhs = try evaluate(right)
            try spend(CELOperations.comparisonCost(lhs, rhs))
            return .bool(CELOperations.equal(lhs, rhs) != negated)
        case .equalsConstant(let operand, let constant, let negated):
            let value = try evaluate(operand)
            try spend(CELOperations.comparisonCost(value, constant))
            return .bool(CELOperations.equal(value, constant) != negated)
        case .orderingConstant(let ordering, let operand, let constant):
            let value = try evaluate(operand)
            try spend(CELOperations.comparisonCost(value, constant))
            return .bool(try CELOperations.order(ordering, value, constant))
        case .ordering(let ordering, let left, let right):
            let lhs = try evaluate(left), rhs = try evaluate(right)
            try spend(CELOperations.comparisonCost(lhs, rhs))
            return .bool(try CELOperations.order(ordering, lhs, rhs))
        case .membership(let element, let collection):
            let value = try evaluate(element), container = try evaluate(collection)
            try spend(CELOperations.comparisonCost(container, container))
            return .bool(try CELOperations.contains(container, value))
        case .function(let function, let arguments):
            // One or two arguments (the checker admits no other): no array per call.
            let first = try evaluate(arguments[0])
            let second = arguments.count > 1 ? try evaluate(arguments[1]) : nil
            try spend(CELOperations.length(first) + (second.map(CELOperations.length) ?? 0))
            return try CELFunctions.call(function, first, second)
        case .matches(let operand, let regex):
            let value = try evaluate(operand)
            guard case .string(let text) = value else { throw .noOverload("matches", value) }
            try spend(CELCost.reading(text.utf8.count * regex.programSize))
            return .bool(regex.matches(text))
        case .comprehension(let comprehension):
            return try evaluate(comprehension)
        }
    }

    /// `&&` (`absorbing` false) or `||` (true): the absorbing value on either side decides, whatever the other is;
    /// otherwise an error on either side is the result. The cost limit is never absorbed.
    private mutating func logical(_ left: CELNode, _ right: CELNode, absorbing: Bool) throws(CELEvaluationError) -> CELValue {
        let lhs = try truth(left, absorbing: absorbing)
        if case .success(absorbing) = lhs { return .bool(absorbing) }
        let rhs = try truth(right, absorbing: absorbing)
        if case .success(absorbing) = rhs { return .bool(absorbing) }
        if case .failure(let error) = lhs { throw error }
        if case .failure(let error) = rhs { throw error }
        return .bool(!absorbing)
    }

    /// One side of `&&` or `||`: its bool, or the error it is (a non-bool is one); only the cost limit is thrown.
    private mutating func truth(_ node: CELNode, absorbing: Bool) throws(CELEvaluationError) -> Result<Bool, CELEvaluationError> {
        do {
            let value = try evaluate(node)
            guard case .bool(let flag) = value else { return .failure(.noOverload(absorbing ? "||" : "&&", value)) }
            return .success(flag)
        } catch {
            if error.isCostLimit { throw error }
            return .failure(error)
        }
    }

    private mutating func evaluate(_ comprehension: CELComprehension) throws(CELEvaluationError) -> CELValue {
        let range = try evaluate(comprehension.range)
        let elements: CELList
        switch range {
        case .list(let list): elements = list
        case .map(let map): elements = .values(map.keys)
        default: throw .noOverload(comprehension.kind.rawValue, range)
        }
        var deferredError: CELEvaluationError?
        var trueCount = 0
        var results: [CELValue] = []
        for position in 0..<elements.count {
            try spend(1)
            let element = elements[position]
            locals[comprehension.slot] = element
            var passes = true
            if let predicate = comprehension.predicate {
                do throws(CELEvaluationError) {
                    let value = try evaluate(predicate)
                    guard case .bool(let flag) = value else { throw CELEvaluationError.noOverload(comprehension.kind.rawValue, value) }
                    passes = flag
                } catch {
                    // `all` and `exists` keep looking for the value that decides; the others fail at once.
                    guard !error.isCostLimit, comprehension.kind == .all || comprehension.kind == .exists else { throw error }
                    deferredError = deferredError ?? error
                    continue
                }
            }
            switch comprehension.kind {
            case .all: if !passes { return .bool(false) }
            case .exists: if passes { return .bool(true) }
            case .existsOne: if passes { trueCount += 1 }
            case .filter: if passes { results.append(element) }
            case .map:
                if passes, let transform = comprehension.transform { results.append(try evaluate(transform)) }
            }
        }
        if let deferredError { throw deferredError }
        switch comprehension.kind {
        case .all: return .bool(true)
        case .exists: return .bool(false)
        case .existsOne: return .bool(trueCount == 1)
        case .map, .filter: return .list(.values(results))
        }
    }
}
