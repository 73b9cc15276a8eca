/// A checked expression: names resolved, functions and operators bound to what they do, literal patterns compiled.
/// What `CELEvaluator` runs; made once per configuration.
indirect enum CELNode: Sendable {
    case constant(CELValue)
    case claims
    /// An MCP request's message: `method`, `name`, `arguments` (docs/reference.md §17.3).
    case mcp
    /// `request` as a whole (a map of its four fields).
    case request
    case requestField(CELRequestField)
    /// A comprehension's variable, by its slot.
    case local(Int)
    /// `operand.field`: a map's entry (an error when absent).
    case select(CELNode, String)
    /// `has(operand.field)`: whether the map has the entry.
    case has(CELNode, String)
    case index(CELNode, CELNode)
    case list([CELNode])
    case map(keys: [CELNode], values: [CELNode])
    case and(CELNode, CELNode)
    case or(CELNode, CELNode)
    case not(CELNode)
    case conditional(CELNode, CELNode, CELNode)
    case negate(CELNode)
    case arithmetic(CELArithmetic, CELNode, CELNode)
    case equals(CELNode, CELNode, negated: Bool)
    /// `operand == constant` (either way round; equality is symmetric): one node fewer to visit.
    case equalsConstant(CELNode, CELValue, negated: Bool)
    case ordering(CELOrdering, CELNode, CELNode)
    /// `operand < constant` and the like.
    case orderingConstant(CELOrdering, CELNode, CELValue)
    /// `element in collection`
    case membership(CELNode, CELNode)
    case function(CELFunction, [CELNode])
    /// `text.matches(pattern)` with a literal pattern, compiled at load.
    case matches(CELNode, LinearRegex)
    case comprehension(CELComprehension)
}

enum CELRequestField: String, Sendable, CaseIterable {
    case method, path, host, headers
}

enum CELArithmetic: String, Sendable {
    case add = "+", subtract = "-", multiply = "*", divide = "/", remainder = "%"
}

enum CELOrdering: String, Sendable {
    case less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">="
}

/// The functions besides operators and macros, bound at load.
enum CELFunction: String, Sendable {
    case size, startsWith, endsWith, contains
    case int, uint, double, string, bytes, bool, dyn, type
}

/// `all`, `exists`, `exists_one`, `map`, `filter` over a list's elements or a map's keys.
struct CELComprehension: Sendable {
    enum Kind: String, Sendable {
        case all, exists
        case existsOne = "exists_one"
        case map, filter
    }

    let kind: Kind
    let range: CELNode
    /// Where the iteration variable lives while the body runs.
    let slot: Int
    /// The condition (`all`, `exists`, `exists_one`, `filter`, and `map`'s three-argument form).
    let predicate: CELNode?
    /// `map`'s transform.
    let transform: CELNode?
}
