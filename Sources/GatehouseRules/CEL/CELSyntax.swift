/// An expression as parsed (cel-spec langdef "Syntax"), before names are resolved. Positions are offsets in
/// Unicode scalars from the expression's start, for error messages.
indirect enum CELSyntax: Sendable {
    case literal(CELValue, at: Int)
    case identifier(String, at: Int)
    /// `operand.field`
    case select(CELSyntax, field: String, at: Int)
    /// `operand[index]`
    case index(CELSyntax, CELSyntax, at: Int)
    /// `name(arguments)` or `target.name(arguments)`: functions, operators (`_+_`, `!_`, …) and macros alike.
    case call(target: CELSyntax?, name: String, arguments: [CELSyntax], at: Int)
    case list([CELSyntax], at: Int)
    case map([(key: CELSyntax, value: CELSyntax)], at: Int)

    var position: Int {
        switch self {
        case .literal(_, let at), .identifier(_, let at), .select(_, _, let at), .index(_, _, let at), .call(_, _, _, let at),
             .list(_, let at), .map(_, let at):
            at
        }
    }
}

/// A problem with an expression's text or meaning, found at load.
struct CELCompileError: Error, Sendable, Equatable, CustomStringConvertible {
    let message: String
    /// In Unicode scalars from the start.
    let position: Int

    var description: String { "at \(position + 1): \(message)" }
}
