/// The JSON-RPC message of an MCP request (Streamable HTTP: one message per POST), as rules read it
/// (docs/reference.md §17.3): read strictly (the project's JSON rules: duplicate names, bad UTF-8, lone
/// surrogates refused), one object with `"jsonrpc": "2.0"`, never a batch.
public struct MCPMessage: Sendable, Equatable {
    /// The request's or notification's `method`; empty for a JSON-RPC response (a client's answer to the server).
    public let method: String
    /// `params.name` of `tools/call` and `prompts/get`, `params.uri` of `resources/read`, `subscribe` and
    /// `unsubscribe`; else empty.
    public let name: String
    /// `params.arguments` of `tools/call` as read (an object, already checked strictly), made into values only when a
    /// rule reads them (`arguments`).
    private let storedArguments: Arguments

    private enum Arguments: Sendable {
        case values([String: JSONValue])
        case json([UInt8])
    }

    public init(method: String, name: String = "", arguments: [String: JSONValue] = [:]) {
        self.method = method
        self.name = name
        self.storedArguments = .values(arguments)
    }

    /// `argumentsJSON`: the bytes of the `arguments` object, which the scan has checked are strict JSON.
    init(method: String, name: String, argumentsJSON: [UInt8]?) {
        self.method = method
        self.name = name
        self.storedArguments = argumentsJSON.map { .json($0) } ?? .values([:])
    }

    /// `params.arguments` of `tools/call` (an object), else empty.
    public var arguments: [String: JSONValue] {
        switch storedArguments {
        case .values(let values): values
        case .json(let bytes): (try? StrictJSON.parse(bytes, maxDepth: Self.maxDepth))?.objectValue ?? [:]
        }
    }

    public static func == (first: MCPMessage, second: MCPMessage) -> Bool {
        first.method == second.method && first.name == second.name && first.arguments == second.arguments
    }

    /// What a request without a message (a `GET` stream, a `DELETE`, a body that is not JSON) shows rules.
    public static let none = MCPMessage(method: "")

    /// Why a body is not one MCP message: the JSON-RPC error it is answered with (`id` null).
    public struct Refusal: Error, Sendable, Equatable {
        /// `-32700` (parse error) or `-32600` (invalid request).
        public let code: Int
        public let message: String

        public init(code: Int, message: String) {
            self.code = code
            self.message = message
        }

        static func parseError(_ detail: String) -> Refusal { Refusal(code: -32700, message: "Parse error: \(detail)") }
        static func invalidRequest(_ detail: String) -> Refusal { Refusal(code: -32600, message: "Invalid Request: \(detail)") }

        /// The JSON-RPC error response (JSON-RPC 2.0 §5: `id` null when it could not be read).
        public var responseJSON: String {
            JSONValue.object([
                "jsonrpc": .string("2.0"), "id": .null,
                "error": .object(["code": .number(String(code)), "message": .string(message)]),
            ]).compactJSON
        }
    }

    /// The deepest a message may nest (MCP tool arguments are JSON Schema-shaped objects, rarely deep).
    public static let maxDepth = 64

    /// Reads one message. A batch (an array), anything that is not strict JSON, an object without `"jsonrpc": "2.0"`,
    /// a `method` that is not a string, or an object that is neither a request, a notification nor a response is refused.
    public static func read(_ bytes: some Collection<UInt8>) -> Result<MCPMessage, Refusal> {
        if let scanned = bytes.withContiguousStorageIfAvailable(scan) ?? nil { return .success(scanned) }
        return readTree(bytes)
    }

    /// `read` through the whole tree: the refusals' words, and what the scan leaves to it.
    package static func readTree(_ bytes: some Collection<UInt8>) -> Result<MCPMessage, Refusal> {
        let value: JSONValue
        do {
            value = try StrictJSON.parse(bytes, maxDepth: maxDepth)
        } catch {
            return .failure(.parseError(error.description))
        }
        guard case .object(let members) = value else {
            if case .array = value { return .failure(.invalidRequest("batches are not accepted (one message per request)")) }
            return .failure(.invalidRequest("the message is not a JSON object"))
        }
        guard members["jsonrpc"] == .string("2.0") else { return .failure(.invalidRequest("\"jsonrpc\" is not \"2.0\"")) }
        guard let methodValue = members["method"] else {
            guard members["result"] != nil || members["error"] != nil else {
                return .failure(.invalidRequest("neither a request (method) nor a response (result or error)"))
            }
            return .success(MCPMessage(method: ""))
        }
        guard case .string(let method) = methodValue else { return .failure(.invalidRequest("\"method\" is not a string")) }
        guard case .object(let params)? = members["params"] else { return .success(MCPMessage(method: method)) }
        switch method {
        case "tools/call":
            let arguments: [String: JSONValue] = if case .object(let object)? = params["arguments"] { object } else { [:] }
            return .success(MCPMessage(method: method, name: params["name"]?.stringValue ?? "", arguments: arguments))
        case "prompts/get":
            return .success(MCPMessage(method: method, name: params["name"]?.stringValue ?? ""))
        case "resources/read", "resources/subscribe", "resources/unsubscribe":
            return .success(MCPMessage(method: method, name: params["uri"]?.stringValue ?? ""))
        default:
            return .success(MCPMessage(method: method))
        }
    }
}
