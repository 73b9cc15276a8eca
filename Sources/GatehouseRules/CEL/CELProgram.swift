/// One expression of the Common Expression Language, compiled once per configuration: parsed, checked (names,
/// functions, operand types where known, the result type) and refused at load when its cost has no bound under
/// the limit. `evaluate` runs it over a request's activation. A class, immutable: a route's rule is copied with the
/// route on every request, and one reference is one retain.
final class CELProgram: Sendable {
    /// What the expression is for: a route's `when` rule must be able to be bool; a header's value any scalar or list.
    enum Purpose: Sendable {
        case rule, headerValue
        /// Any value (`gatehouse` tooling and tests that look at what an expression computes).
        case anyValue
    }

    /// Longer expressions are refused (a rule is a line or a few).
    static let maxSourceScalars = 4096

    let source: String
    let root: CELNode
    let slots: Int
    let limit: Int
    /// The load-time estimate of the worst case, in `CELCost` units.
    let estimatedCost: Double
    /// The expression reads `mcp`: only then is an MCP message made into values for it.
    let readsMCP: Bool

    init(_ source: String, purpose: Purpose, cost: CELCost) throws(CELCompileError) {
        guard source.unicodeScalars.count <= Self.maxSourceScalars else {
            throw CELCompileError(message: "longer than \(Self.maxSourceScalars) characters", position: 0)
        }
        var compiler = CELCompiler(cost: cost, readsRequest: purpose != .headerValue)
        let checked = try compiler.check(try CELParser.parse(source))
        switch purpose {
        case .rule:
            guard checked.type.admits(.bool) else {
                throw CELCompileError(message: "a rule must be bool, and this one is always \(checked.type)", position: 0)
            }
        case .headerValue:
            switch checked.type {
            case .bytes, .map, .request, .type:
                throw CELCompileError(
                    message: "a header value is a string, a number, a bool or a list of those, and this one is always \(checked.type)", position: 0)
            default: break
            }
        case .anyValue:
            break
        }
        guard checked.cost <= Double(cost.limit) else {
            throw CELCompileError(
                message: "its cost has no bound under the limit: up to \(Self.rounded(checked.cost)) steps for a token as large as a request head "
                    + "allows, over the limit of \(cost.limit) (a comprehension inside a comprehension over a claim?)",
                position: 0)
        }
        self.source = source
        root = checked.node
        slots = compiler.slotCount
        limit = cost.limit
        estimatedCost = checked.cost
        readsMCP = compiler.readsMCP
    }

    /// The comprehension variables live in stack memory for the evaluation (no allocation for them).
    func evaluate(_ activation: CELActivation) -> Result<CELValue, CELEvaluationError> {
        withUnsafeTemporaryAllocation(of: CELValue.self, capacity: max(slots, 1)) { locals in
            locals.initialize(repeating: .null)
            defer { locals.deinitialize() }
            var evaluator = CELEvaluator(activation, locals: locals, limit: limit)
            do throws(CELEvaluationError) {
                return .success(try evaluator.evaluate(root))
            } catch {
                return .failure(error)
            }
        }
    }

    /// `1.2e9` rather than 25 digits.
    private static func rounded(_ cost: Double) -> String {
        cost < 1e9 ? String(Int(cost)) : "\(Int(cost / 1e9))e9"
    }
}

extension CELProgram: Equatable {
    /// Two programs are the same when their text is (a configuration compares its settings on reload).
    static func == (lhs: CELProgram, rhs: CELProgram) -> Bool { lhs.source == rhs.source && lhs.limit == rhs.limit }
}
