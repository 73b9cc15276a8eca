import NIOHTTP1
import GatehouseSyntax

/// What a rule reads: the verified token's claims and the request as routes see it.
struct CELActivation: Sendable {
    var claims: [String: JSONValue]
    var method: String
    /// The normalized path routes match.
    var path: String
    /// The host routes match (Host, `:authority`, a Check's authority, the decision endpoint's `X-Forwarded-Host`);
    /// empty when the request names none.
    var host: String
    var headers: HTTPHeaders
    /// `mcp`: an MCP request's message as a map of its three fields (`mcp.method`, `mcp.name`, `mcp.arguments`), made
    /// once for the evaluation, so its arguments are parsed once however often the rule reads them (`MCPMessage` keeps
    /// them as bytes); `MCPMessage.none`'s for a request without one.
    let mcpValue: CELValue

    init(claims: [String: JSONValue], method: String, path: String, host: String, headers: HTTPHeaders, mcp: MCPMessage? = nil) {
        self.claims = claims
        self.method = method
        self.path = path
        self.host = host
        self.headers = headers
        mcpValue = mcp.map(Self.value(of:)) ?? Self.noMessage
    }

    private static let noMessage = value(of: .none)

    private static func value(of mcp: MCPMessage) -> CELValue {
        .map(.json(["method": .string(mcp.method), "name": .string(mcp.name), "arguments": .object(mcp.arguments)]))
    }

    func value(of field: CELRequestField) -> CELValue {
        switch field {
        case .method: .string(method)
        case .path: .string(path)
        case .host: .string(host)
        case .headers: .map(.headers(headers))
        }
    }

    /// `request` as a whole: a map of its fields.
    var request: CELValue {
        var entries = CELMapEntries()
        for field in CELRequestField.allCases { _ = entries.insert(.string(field.rawValue), value(of: field)) }
        return .map(.entries(entries))
    }
}

/// Why an evaluation has no value: CEL's error values (a missing claim, a type mismatch, a division by zero), or
/// the cost limit, which no `&&`, `||` or macro absorbs.
struct CELEvaluationError: Error, Sendable, CustomStringConvertible {
    let message: String
    var isCostLimit = false

    var description: String { message }

    static func noOverload(_ operation: String, _ values: CELValue...) -> CELEvaluationError {
        CELEvaluationError(message: "no such overload: \(operation) on (\(values.map(\.type.rawValue).joined(separator: ", ")))")
    }
}
