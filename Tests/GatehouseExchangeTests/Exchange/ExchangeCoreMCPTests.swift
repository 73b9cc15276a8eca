import Testing
import NIOCore
import NIOHTTP1
import GatehouseExchange
import GatehouseConfig
import GatehousePolicy
import GatehouseSyntax
import GatehouseTokenFixtures

/// An MCP server's requests in the core, without a socket (docs/reference.md §17.3, §17.4): a JSON POST read whole
/// before it is judged, its route matched again with its message, the held body forwarded byte for byte, and the
/// session the upstream's answer makes, uses or ends recorded for the verified caller (and nothing when it names none).
struct ExchangeCoreMCPTests {
    static func testbed() throws -> CoreTestbed {
        let configuration = try Configuration.parse(toml: ConfigFixture.minimal("""
            [[resource]]
            url = "https://api.test/mcp"
            authorization_servers = ["https://issuer.example.test"]
            mcp = true

            [[route]]
            prefix = "/mcp"
            mcp_tools = ["delete_*"]
            scopes = ["repo:admin"]

            """))
        return CoreTestbed(settings: ExchangeSettings(configuration, upstreamHead: UpstreamRequestHead(configuration), remembersTokens: true))
    }

    static let json = [("content-type", "application/json")]

    static func call(_ tool: String) -> ByteBuffer {
        ByteBuffer(string: #"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\#(tool)","arguments":{"q":"x"}}}"#)
    }

    /// The message in two parts: read until it ends (the body deadline watched meanwhile), then judged by the route its
    /// tool matches, and forwarded with both parts as they came.
    @Test func aMessageIsReadWholeThenJudgedByTheRouteItMatches() throws {
        var testbed = try Self.testbed()
        for (tool, scopes) in [("delete_repo", ["repo:admin"]), ("search", [])] {
            var core = ExchangeStateMachine(speaksGRPC: false, forwardsAtReadEnd: false)
            let reading = testbed.run(&core, method: .POST, path: "/mcp", token: "t", headers: Self.json, ended: false)
            guard case .readBody(let until) = reading.action else {
                Issue.record("the message is read first: \(reading.action)")
                return
            }
            #expect(until == testbed.now + testbed.settings.idleTimeout)
            #expect(core.watch(now: testbed.now, legTakesMore: nil) == .ahead(until))
            var message = Self.call(tool)
            let first = message.readSlice(length: 20)!
            #expect(core.receivedBody(first).isNone && core.receivedBody(message).isNone)
            guard case .decide(let request, _, let generation) = core.receivedEnd() else {
                Issue.record("judged once the message ended")
                return
            }
            #expect(request.mcp?.method == "tools/call" && request.mcp?.name == tool && request.mcp?.arguments == ["q": .string("x")])
            #expect(request.rule.scopes == scopes, "\(tool)")
            guard case .forward(_, let held) = core.decided(.admit(.verified(CoreTestbed.identity())), generation: generation, now: testbed.now, wallClock: 0)
            else {
                Issue.record("forwarded once admitted")
                return
            }
            #expect(held == [first, message])
        }
    }

    /// A body that is not one message is answered 400 in JSON-RPC's form; one over `max_message_bytes` 413.
    @Test func aBodyThatIsNoMessageIsAnsweredHere() throws {
        var testbed = try Self.testbed()
        var core = ExchangeStateMachine(speaksGRPC: false, forwardsAtReadEnd: false)
        let batch = testbed.run(&core, method: .POST, path: "/mcp", token: "t", headers: Self.json, ended: false)
        #expect(core.receivedBody(ByteBuffer(string: #"[{"jsonrpc":"2.0","method":"ping"}]"#)).isNone, "\(batch.action)")
        guard case .send(let refused) = core.receivedEnd() else {
            Issue.record("a batch is refused")
            return
        }
        #expect(refused.status == .badRequest && refused.body.contains("-32600"))
    }

    /// After the upstream's 2xx: the session it names (or the caller used) is bound to the caller, a DELETE of one ends
    /// it, and an answer naming none records nothing.
    @Test func theSessionTheUpstreamNamesIsBoundToTheCaller() throws {
        var testbed = try Self.testbed()
        func answered(
            _ method: HTTPMethod, headers: [(String, String)] = [], status: Int = 200, sessionID: String?
        ) -> ExchangeRecords.SessionChange? {
            var core = ExchangeStateMachine(speaksGRPC: false, forwardsAtReadEnd: false)
            let outcome = testbed.run(&core, method: method, path: "/mcp", token: "t", headers: headers)
            #expect(outcome.isForwarded, "\(method) \(outcome.action)")
            #expect(core.bindsSessions)
            _ = core.takeRecords()
            core.upstreamAnswered(status: status, sessionID: sessionID)
            return core.takeRecords()?.session
        }
        let owner = "\(CoreTestbed.provider)\nuser-1"
        #expect(answered(.GET, sessionID: "s-1") == .bind(id: "s-1", owner: owner, ttlSeconds: 86400))
        #expect(answered(.GET, headers: [("mcp-session-id", "s-2")], sessionID: nil) == .bind(id: "s-2", owner: owner, ttlSeconds: 86400))
        #expect(answered(.DELETE, headers: [("mcp-session-id", "s-3")], sessionID: nil) == .end(id: "s-3", owner: owner))
        #expect(answered(.GET, sessionID: nil) == nil, "no session named")
        #expect(answered(.GET, status: 404, sessionID: "s-4") == nil, "not a 2xx")
        #expect(answered(.GET, sessionID: "bad id\u{7F}") == nil, "not a session id")
    }
}
