package import NIOHTTP1
package import GatehouseSyntax
import GatehouseRules
import GatehouseTokens
package import GatehouseVocabulary

/// What a route's `when` rule reads of the request (docs/reference.md §3.11): the head and the path and host the
/// route was matched by.
package struct RuleRequest {
    package let head: HTTPRequestHead
    /// The normalized path.
    package let path: String
    /// The host routes match; nil when the request names none.
    package let host: String?
    /// An MCP request's message (`mcp` in the rule); nil reads as a request without one.
    package let mcp: MCPMessage?

    package init(head: HTTPRequestHead, path: String, host: String?, mcp: MCPMessage? = nil) {
        self.head = head
        self.path = path
        self.host = host
        self.mcp = mcp
    }
}

extension RouteRule {
    /// The route's `when` rule, after every other requirement: only `true` allows. `false`, an evaluation error (a
    /// missing claim, a type mismatch, the cost limit) or a value that is not a bool is 403 `forbidden`, whose
    /// message names the rule.
    package func checkCondition(claims: [String: JSONValue], request: RuleRequest) -> AuthFailure? {
        guard let condition else { return nil }
        let verdict = condition.verdict(
            claims: claims, method: request.head.method.rawValue, path: request.path, host: request.host ?? "", headers: request.head.headers,
            mcp: request.mcp ?? .none)
        switch verdict {
        case .allows: return nil
        case .isFalse: return AuthFailure(.forbidden, "rule \(conditionName) is false")
        case .notBool(let type): return AuthFailure(.forbidden, "rule \(conditionName) gave \(type), not bool")
        case .failed(let message): return AuthFailure(.forbidden, "rule \(conditionName) failed: \(message)")
        }
    }

    /// `route[2].when`: how the failure log names the rule (made only for a refusal).
    private var conditionName: String { index.map { "route[\($0)].when" } ?? "when" }
}
