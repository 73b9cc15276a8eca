/// What Gatehouse takes for an MCP session id (docs/reference.md §17.4): the transport's rule, visible ASCII
/// (0x21-0x7E), bounded so that a server's odd id cannot grow the shared store without limit.
enum MCPSessionIntake {
    static let maxIDBytes = 256

    /// The answer to a request whose session is another identity's: a JSON-RPC error as for an unknown session.
    static let notFoundJSON = "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32001,\"message\":\"Session not found\"}}"

    static func isValidID(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= maxIDBytes && id.utf8.allSatisfy { $0 >= 0x21 && $0 <= 0x7E }
    }
}
