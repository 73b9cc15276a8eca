/// A CEL expression of the configuration (`[[route]] when`, a `[headers]` value's `expression`), compiled once when
/// the configuration is loaded. Two are equal when their text is.
public struct RuleExpression: Sendable, Equatable {
    public var source: String { program.source }
    let program: CELProgram

    /// Why an expression was refused at load, with the position in it (1-based, in characters).
    public struct Invalid: Error, Sendable, CustomStringConvertible {
        public let message: String
        public var description: String { message }
    }

    /// A route's `when`: true allows; over `claims`, `request` and `mcp` (`maxMessageBytes`: the largest MCP message a
    /// `[[resource]]` reads, which bounds `mcp.arguments`).
    public init(rule source: String, maxHeaderBytes: Int, maxMessageBytes: Int = 1 << 20) throws(Invalid) {
        try self.init(source, purpose: .rule, maxHeaderBytes: maxHeaderBytes, maxMessageBytes: maxMessageBytes)
    }

    /// A header's value: over `claims` only (a token's headers are the same on every request that presents it).
    public init(headerValue source: String, maxHeaderBytes: Int) throws(Invalid) {
        try self.init(source, purpose: .headerValue, maxHeaderBytes: maxHeaderBytes)
    }

    private init(_ source: String, purpose: CELProgram.Purpose, maxHeaderBytes: Int, maxMessageBytes: Int = 1 << 20) throws(Invalid) {
        do {
            program = try CELProgram(source, purpose: purpose, cost: CELCost(maxHeaderBytes: maxHeaderBytes, maxMessageBytes: maxMessageBytes))
        } catch {
            throw Invalid(message: "\(error.message) (at character \(error.position + 1))")
        }
    }
}
