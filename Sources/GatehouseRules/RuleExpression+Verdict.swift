package import NIOHTTP1
package import GatehouseSyntax

extension RuleExpression {
    /// What a route's `when` rule said of one request: only `allows` lets it through.
    package enum Verdict: Equatable {
        case allows
        case isFalse
        /// The rule gave a value of this CEL type, not a bool.
        case notBool(type: String)
        /// Evaluation failed (a missing claim, no overload, the cost limit), with CEL's message.
        case failed(String)
    }

    /// Evaluates a `when` rule over the token's claims and the request's method, normalized path, host and headers
    /// (docs/reference.md §3.11).
    package func verdict(
        claims: [String: JSONValue], method: String, path: String, host: String, headers: HTTPHeaders, mcp: MCPMessage = .none
    ) -> Verdict {
        let activation = CELActivation(
            claims: claims, method: method, path: path, host: host, headers: headers, mcp: program.readsMCP ? mcp : nil)
        switch program.evaluate(activation) {
        case .success(.bool(true)): return .allows
        case .success(.bool(false)): return .isFalse
        case .success(let value): return .notBool(type: value.type.rawValue)
        case .failure(let error): return .failed(error.message)
        }
    }
}
