import Testing
import GatehouseSyntax

/// The MCP message reader (docs/reference.md §17.3) and the `mcp_methods` / `mcp_tools` patterns.
struct MCPMessageReaderTests {
    static func read(_ text: String) -> Result<MCPMessage, MCPMessage.Refusal> { MCPMessage.read(Array(text.utf8)) }

    @Test func whatRulesSeeOfEachKindOfMessage() throws {
        let call = try Self.read("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"search\",\"arguments\":{\"q\":[1,2]}}}").get()
        #expect(call == MCPMessage(method: "tools/call", name: "search", arguments: ["q": .array([.number("1"), .number("2")])]))
        #expect(try Self.read("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"prompts/get\",\"params\":{\"name\":\"p\",\"arguments\":{\"a\":1}}}").get()
            == MCPMessage(method: "prompts/get", name: "p"))
        for method in ["resources/read", "resources/subscribe", "resources/unsubscribe"] {
            #expect(try Self.read("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\(method)\",\"params\":{\"uri\":\"file:///a\"}}").get()
                == MCPMessage(method: method, name: "file:///a"))
        }
        // A notification, a request without params, a tool call whose name or arguments are of another type.
        #expect(try Self.read("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}").get() == MCPMessage(method: "notifications/initialized"))
        #expect(try Self.read("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":7,\"arguments\":[]}}").get()
            == MCPMessage(method: "tools/call"))
        // A response (the client answering the server's request): no method.
        #expect(try Self.read("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}").get() == .none)
        #expect(try Self.read("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":1,\"message\":\"x\"}}").get() == .none)
        // Escapes are read as the server reads them.
        #expect(try Self.read("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"delete\\u005frepo\"}}").get().name == "delete_repo")
    }

    @Test(arguments: [
        ("[]", -32600), ("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", -32600), ("7", -32600), ("null", -32600),
        ("{\"id\":1,\"method\":\"ping\"}", -32600), ("{\"jsonrpc\":2.0,\"method\":\"ping\"}", -32600), ("{\"jsonrpc\":\"2.0\"}", -32600),
        ("{\"jsonrpc\":\"2.0\",\"method\":null}", -32600),
        ("", -32700), ("{", -32700), ("{\"jsonrpc\":\"2.0\",\"method\":\"a\",\"method\":\"b\"}", -32700),
        ("{\"jsonrpc\":\"2.0\",\"method\":\"a\"} x", -32700), ("{\"jsonrpc\":\"2.0\",\"method\":\"\\ud800\"}", -32700),
    ])
    func whatIsNotOneMessageIsRefusedWithItsCode(_ text: String, _ code: Int) {
        guard case .failure(let refusal) = Self.read(text) else {
            Issue.record("\(text) was read as a message")
            return
        }
        #expect(refusal.code == code, "\(text): \(refusal.message)")
        #expect(refusal.responseJSON.contains("\"id\":null"))
    }

    @Test func aMessageNestedDeeperThanTheBoundIsRefused() {
        let deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        let text = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"x\",\"arguments\":{\"a\":\(deep)}}}"
        guard case .failure(let refusal) = Self.read(text) else {
            Issue.record("read")
            return
        }
        #expect(refusal.code == -32700)
    }

    @Test(arguments: [
        ("delete_*", "delete_repo", true), ("delete_*", "delete_", true), ("delete_*", "undelete_repo", false), ("delete_*", "Delete_repo", false),
        ("*", "", true), ("*", "anything", true), ("tools/call", "tools/call", true), ("tools/call", "tools/calls", false),
        ("logging/*", "logging/setLevel", true), ("*/list", "tools/list", true), ("*/list", "tools/listx", false),
        ("a*b*c", "abc", true), ("a*b*c", "aXbYc", true), ("a*b*c", "acb", false), ("a*b*c", "abcbc", true), ("ab*ba", "aba", false),
        ("**", "x", true), ("x", "", false),
    ])
    func globPatternsMatchAnyRunOfCharactersForAStar(_ pattern: String, _ text: String, _ matches: Bool) {
        #expect(GlobPattern(pattern).matches(text) == matches, "\(pattern) ~ \(text)")
    }
}
