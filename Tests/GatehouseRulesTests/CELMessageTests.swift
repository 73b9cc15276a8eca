import Testing
import NIOHTTP1
import GatehouseSyntax
@testable import GatehouseRules

/// `mcp` in a rule (docs/reference.md §17.3): the message a scan kept its arguments of as bytes is made into values once
/// for an evaluation, and only for a rule that reads `mcp`; a rule that reads it several times sees one message.
struct CELMessageTests {
    static let call = #"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"repo":"a","n":2}}}"#

    static func verdict(_ source: String, mcp: MCPMessage) throws -> RuleExpression.Verdict {
        try RuleExpression(rule: source, maxHeaderBytes: 16384)
            .verdict(claims: CELTestSupport.claims, method: "POST", path: "/mcp", host: "api.test", headers: HTTPHeaders(), mcp: mcp)
    }

    @Test func aRuleReadsTheMessageItNames() throws {
        let message = try MCPMessage.read(Array(Self.call.utf8)).get()
        #expect(try CELTestSupport.compile("mcp.arguments.repo == 'a'", purpose: .rule).readsMCP)
        #expect(try !CELTestSupport.compile("claims.sub == 'user-1' && request.method == 'POST'", purpose: .rule).readsMCP)
        let many = "mcp.name == 'search' && mcp.arguments.repo == 'a' && mcp.arguments.n == 2 && [1, 2, 3].all(x, has(mcp.arguments.repo))"
        #expect(try Self.verdict(many, mcp: message) == .allows)
        #expect(try Self.verdict("mcp.arguments.repo == 'b'", mcp: message) == .isFalse)
        // Without a message, `mcp` is the empty one: a missing argument fails the rule, as before the scan.
        #expect(try Self.verdict("mcp.method == ''", mcp: .none) == .allows)
        guard case .failed = try Self.verdict("mcp.arguments.repo == 'a'", mcp: .none) else {
            Issue.record("a missing argument fails the rule")
            return
        }
        // A rule that does not read `mcp` is judged alike with or without a message.
        #expect(try Self.verdict("claims.sub == 'user-1'", mcp: message) == Self.verdict("claims.sub == 'user-1'", mcp: .none))
    }
}
