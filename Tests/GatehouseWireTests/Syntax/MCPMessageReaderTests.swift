import Testing
import GatehouseSyntax
import GatehouseTestSupport

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

/// The scan that reads an MCP message without its tree (issue 56) against the tree it stands in for: on messages and
/// on their mutations (a byte changed, dropped or doubled), the scan accepts exactly what the tree accepts, with the
/// same message, and the validator under it refuses exactly what `StrictJSON` refuses.
struct MCPMessageScanTests {
    static let messages = [
        #"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search","arguments":{"repo":"public/docs","query":"qq"}}}"#,
        #"{"params":{"arguments":{"a":[1,2.5e3,-0,true,false,null,{"b":"\u00e9\ud83d\ude00\n"}]},"name":"delete\u005frepo"},"method":"tools/call","jsonrpc":"2.0","id":"x"}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///a","name":"n"}}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"p","arguments":{"a":1}}}"#,
        #"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        #"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}]}}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7,"arguments":[]}}"#,
        #" { "jsonrpc" : "2.0" , "id" : 1 , "method" : "tools/call" , "params" : { "name" : "a" , "arguments" : { } } } "#,
        #"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"x":1,"x":2}}}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}}"#,
        #"{"jsonrpc":"2.0","jsonrpc":"2.0","method":"ping"}"#,
        #"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"caf\u00e9","arguments":{"caf\u00e9":1,"café":2}}}"#,
    ]

    /// The scan's verdict and message equal the tree's; the validator's verdict equals StrictJSON's.
    static func agree(_ bytes: [UInt8]) -> Bool {
        let scanned = bytes.withUnsafeBufferPointer { MCPMessage.scan($0) }
        let tree = try? MCPMessage.readTree(bytes).get()
        let valid = (try? bytes.withUnsafeBufferPointer { buffer throws(StrictJSONError) in try StrictJSON.validate(buffer, maxDepth: 64) }) != nil
        let parsed = (try? StrictJSON.parse(bytes, maxDepth: 64)) != nil
        return scanned == tree && valid == parsed && MCPMessage.read(bytes) == MCPMessage.readTree(bytes)
    }

    @Test func theScanReadsWhatTheTreeReads() {
        for message in Self.messages { #expect(Self.agree(Array(message.utf8)), "\(message)") }
        #expect(Array(Self.messages[0].utf8).withUnsafeBufferPointer { MCPMessage.scan($0) }?.arguments["query"] == .string("qq"))
        // Duplicates are refused however they are spelled (after unescaping, by canonical equivalence).
        for duplicate in Self.messages[8...] { #expect(Array(duplicate.utf8).withUnsafeBufferPointer { MCPMessage.scan($0) } == nil, "\(duplicate)") }
    }

    @Test func mutatedMessagesAreReadAlike() {
        var generator = SplitMix64(seed: 56)
        let alphabet = Array(#"{}[]":,\ u0123456789abcdefABCDEF.-+eE tnrfl"#.utf8) + [0x00, 0x1F, 0x7F, 0xC3, 0xA9, 0xED, 0xA0, 0x80, 0xF4, 0x90]
        var disagreements: [String] = []
        for round in 0..<20_000 {
            var bytes = Array(Self.messages[round % Self.messages.count].utf8)
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                let at = Int.random(in: 0..<bytes.count, using: &generator)
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: bytes[at] = alphabet.randomElement(using: &generator)!
                case 1: bytes.remove(at: at)
                default: bytes.insert(bytes[at], at: at)
                }
                if bytes.isEmpty { bytes = [UInt8(ascii: "{")] }
            }
            if !Self.agree(bytes), disagreements.count < 5 { disagreements.append(String(decoding: bytes, as: UTF8.self)) }
        }
        #expect(disagreements.isEmpty, "\(disagreements)")
    }

    /// Nesting: the scan and the validator stop where the tree stops.
    @Test func nestingIsBoundedAlike() {
        for depth in [60, 61, 62, 63, 64, 65, 200] {
            let arguments = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
            let message = #"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"a","arguments":{"x":"# + arguments + "}}}"
            #expect(Self.agree(Array(message.utf8)), "depth \(depth)")
        }
    }
}
