import Foundation
@testable import Gatehouse
import NIOHTTP1
import Testing
import GatehouseSyntax
import GatehouseConfig
import GatehouseRules

/// An MCP server's JSON-RPC messages (docs/reference.md §17.3): read whole before the decision, strictly; routes by
/// `mcp_methods` and `mcp_tools`, rules over `mcp`, the failure log's `mcp_method` and `mcp_name`, the body forwarded
/// byte for byte; through both client doors.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct MCPMessageTests {
    static let url = ProtectedResourceTests.url

    /// Tools: `delete_*` needs `repo:admin`, `search` only on public repositories (a rule over its arguments), the rest
    /// of the resource `mcp:tools`.
    static func configure(_ configuration: inout Configuration, maxMessageBytes: Int = 1 << 20) throws {
        var resource = ResourceSettings(url: url, origin: "http://127.0.0.1", host: "127.0.0.1", path: "/mcp", authorizationServers: [Claims.issuer])
        resource.mcp = true
        resource.maxMessageBytes = maxMessageBytes
        configuration.resources = [resource]
        var admin = RouteSettings(match: .prefix("/mcp"))
        admin.mcpTools = ["delete_*"]
        admin.scopes = ["mcp:tools", "repo:admin"]
        var search = RouteSettings(match: .prefix("/mcp"))
        search.mcpTools = ["search"]
        search.when = try RuleExpression(rule: "mcp.arguments.repo.startsWith('public/') && mcp.name == 'search'", maxHeaderBytes: 16384)
        var logging = RouteSettings(match: .prefix("/mcp"))
        logging.mcpMethods = ["logging/*", "ping"]
        logging.auth = .public
        var tools = RouteSettings(match: .prefix("/mcp"))
        tools.scopes = ["mcp:tools"]
        configuration.routes = [admin, search, logging, tools]
    }

    static func run(maxMessageBytes: Int = 1 << 20, _ body: (TestEnvironment) async throws -> Void) async throws {
        try await TestEnvironment.run(configure: { configuration, _ in try! configure(&configuration, maxMessageBytes: maxMessageBytes) }, body)
    }

    static func token(scope: String = "mcp:tools") -> String { ProtectedResourceTests.token(scope: scope) }

    static func call(_ tool: String, _ arguments: String = "{}", id: Int = 1) -> String {
        "{\"jsonrpc\":\"2.0\",\"id\":\(id),\"method\":\"tools/call\",\"params\":{\"name\":\"\(tool)\",\"arguments\":\(arguments)}}"
    }

    static func post(_ env: TestEnvironment, _ body: String, token: String? = Self.token(), contentType: String = "application/json") async throws
        -> TestEnvironment.Response
    {
        try await env.request("/mcp", method: .POST, token: token, headers: [("Content-Type", contentType), ("Accept", "application/json, text/event-stream")], body: body)
    }

    @Test func aToolCallIsJudgedByTheRouteOfItsToolAndForwardedByteForByte() async throws {
        try await Self.run { (env: TestEnvironment) async throws in
            let deletion = Self.call("delete_repo", "{\"name\":\"x\"}")
            let refused = try await Self.post(env, deletion)
            #expect(refused.status == 403)
            #expect(refused.json?["reason"] == .string("insufficient_scope"))
            #expect(refused.headers.first(name: "www-authenticate") == "Bearer realm=\"gatehouse\", error=\"insufficient_scope\", "
                + "scope=\"mcp:tools repo:admin\", resource_metadata=\"http://127.0.0.1/.well-known/oauth-protected-resource/mcp\"")
            let line = try #require(env.failureLog.last)
            #expect(line["mcp_method"] == .string("tools/call"))
            #expect(line["mcp_name"] == .string("delete_repo"))
            #expect(line["sub"] == .string("user-1"))
            // With the scope: forwarded, the body exactly as sent.
            let stepped = try await Self.post(env, deletion, token: Self.token(scope: "mcp:tools repo:admin"))
            #expect(stepped.status == 200)
            #expect(env.upstream.last?.body == Array(deletion.utf8))
            #expect(env.upstream.last?.value("content-length") == String(deletion.utf8.count))
            // Another tool, a listing: the resource's route.
            #expect(try await Self.post(env, Self.call("echo")).status == 200)
            #expect(try await Self.post(env, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}").status == 200)
            // Glob: `delete_*` is not `undelete_repo`, and a name is compared exactly (escapes decoded as the server reads them).
            #expect(try await Self.post(env, Self.call("undelete_repo")).status == 200)
            #expect(try await Self.post(env, Self.call("delete\\u005frepo")).status == 403)
            // A public method pattern: no token needed for `logging/setLevel` and `ping`.
            #expect(try await Self.post(env, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"logging/setLevel\",\"params\":{\"level\":\"info\"}}", token: nil).status == 200)
            #expect(try await Self.post(env, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}", token: nil).status == 200)
            #expect(try await Self.post(env, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"pings\"}", token: nil).status == 401)
            // A JSON-RPC response (the client answering the server) has no method: the resource's route.
            #expect(try await Self.post(env, "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{}}").status == 200)
        }
    }

    @Test func aRuleReadsTheToolsArguments() async throws {
        try await Self.run { (env: TestEnvironment) async throws in
            #expect(try await Self.post(env, Self.call("search", "{\"repo\":\"public/docs\"}")).status == 200)
            let refused = try await Self.post(env, Self.call("search", "{\"repo\":\"secret/keys\"}"))
            #expect(refused.status == 403)
            #expect(refused.json?["reason"] == .string("forbidden"))
            #expect(env.failureLog.last?["mcp_name"] == .string("search"))
            #expect(env.failureLog.last?["detail"]?.stringValue?.contains("route[1].when") == true)
            // An argument of another type, or missing: the rule fails, and a failing rule denies.
            #expect(try await Self.post(env, Self.call("search", "{\"repo\":7}")).status == 403)
            #expect(try await Self.post(env, Self.call("search")).status == 403)
        }
    }

    @Test func whatIsNotOneMessageIsAnswered400InJSONRPCFormAndNeverForwarded() async throws {
        try await Self.run { (env: TestEnvironment) async throws in
            let cases: [(String, Int)] = [
                ("[" + Self.call("echo") + "]", -32600),
                ("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\"", -32700),
                ("{\"id\":1,\"method\":\"tools/list\"}", -32600),
                ("{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"tools/list\"}", -32600),
                ("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":7}", -32600),
                ("{\"jsonrpc\":\"2.0\",\"id\":1}", -32600),
                ("\"tools/list\"", -32600),
                ("", -32700),
                // One name twice: the server's parser might read either; Gatehouse reads neither.
                ("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"name\":\"delete_repo\"}}", -32700),
                ("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"method\":\"tools/call\"}", -32700),
            ]
            for (body, code) in cases {
                let answer = try await Self.post(env, body)
                #expect(answer.status == 400, "\(body)")
                let error = answer.json?["error"]?.objectValue
                #expect(error?["code"] == .number(String(code)), "\(body): \(answer.body)")
                #expect(answer.json?["id"] == .null && answer.json?["jsonrpc"] == .string("2.0"))
            }
            #expect(env.failureLog.isEmpty, "a malformed message is not an authentication failure")
            try await ProtectedResourceTests.expectOnlyMarkerReachedUpstream(env)
        }
    }

    @Test func aMessageLargerThanMaxMessageBytesIsAnswered413WhateverItsFraming() async throws {
        try await Self.run(maxMessageBytes: 256) { (env: TestEnvironment) async throws in
            let large = Self.call("echo", "{\"text\":\"" + String(repeating: "a", count: 300) + "\"}")
            let answer = try await Self.post(env, large)
            #expect(answer.status == 413)
            #expect(answer.json?["error"]?.objectValue?["code"] == .number("-32600"))
            // Chunked: no length to refuse it by, counted as it comes.
            let half = String(repeating: "b", count: 200)
            let raw = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(Self.token())\r\nContent-Type: application/json\r\n"
                + "Transfer-Encoding: chunked\r\n\r\n" + String(format: "%x", half.utf8.count) + "\r\n" + half + "\r\n"
                + String(format: "%x", half.utf8.count) + "\r\n" + half + "\r\n0\r\n\r\n"
            let reply = RawHTTP.exchange(port: env.port, raw)
            #expect(RawHTTP.statuses(reply) == [413], "\(reply)")
            // At the bound: judged and forwarded.
            let fits = Self.call("echo", "{\"t\":\"" + String(repeating: "c", count: 256 - Self.call("echo", "{\"t\":\"\"}").utf8.count) + "\"}")
            #expect(fits.utf8.count == 256)
            env.upstream.reset()
            #expect(try await Self.post(env, fits).status == 200)
            #expect(env.upstream.last?.body == Array(fits.utf8))
        }
    }

    @Test func requestsWithoutAMessageAreJudgedByTheResourcesRoutes() async throws {
        try await Self.run { (env: TestEnvironment) async throws in
            // The SSE stream and the end of a session carry no message: routes with mcp_* do not match them.
            #expect(try await env.request("/mcp", token: Self.token(), headers: [("Accept", "text/event-stream")]).status == 200)
            #expect(try await env.request("/mcp", method: .DELETE, token: Self.token()).status == 200)
            #expect(try await env.request("/mcp", method: .GET).status == 401)
            // A POST that is not JSON carries no message either (the server refuses it; Gatehouse forwards it as it is).
            #expect(try await Self.post(env, "text", contentType: "text/plain").status == 200)
        }
    }

    @Test func theHTTP2DoorReadsTheMessageAlike() async throws {
        try await Self.run { (env: TestEnvironment) async throws in
            let deletion = Self.call("delete_repo")
            func request(_ name: String, _ body: String, scope: String = "mcp:tools") -> HTTP2IntakeTests.Sent {
                .init(name: name, headers: HTTP2IntakeTests.block(env, method: "POST", path: "/mcp", token: Self.token(scope: scope),
                                                                 [("content-type", "application/json")]), body: body)
            }
            let answers = try await HTTP2IntakeTests.send([
                request("refused", deletion), request("stepped", deletion, scope: "mcp:tools repo:admin"), request("batch", "[\(deletion)]"),
            ], to: env)
            #expect(answers["refused"]?.status == 403)
            #expect(answers["refused"]?.value("www-authenticate")?.contains("scope=\"mcp:tools repo:admin\"") == true)
            #expect(answers["stepped"]?.status == 200)
            #expect(answers["batch"]?.status == 400)
            #expect(env.upstream.requests.count == 1)
            #expect(env.upstream.last?.body == Array(deletion.utf8))
            #expect(env.failureLog.last?["mcp_name"] == .string("delete_repo"))
        }
    }
}

extension MCPMessageTests {
    /// The decision endpoint never sees the body: what the message would decide is refused there, not judged by a route
    /// after the tool's (docs/security.md M13); a request whose route does not depend on it is judged as usual.
    @Test func theDecisionEndpointRefusesWhatNeedsTheMessage() async throws {
        try await Self.run { (env: TestEnvironment) async throws in
            func check(_ method: String, _ uri: String) async throws -> TestEnvironment.Response {
                try await env.request("/.gatehouse/check", token: Self.token(), headers: [
                    ("X-Forwarded-Method", method), ("X-Forwarded-Uri", uri), ("X-Forwarded-Host", "127.0.0.1"),
                    ("Content-Type", "application/json"),
                ])
            }
            let post = try await check("POST", "/mcp")
            #expect(post.status == 403)
            #expect(post.headers.first(name: "x-gatehouse-reason") == "forbidden")
            #expect(env.failureLog.last?["detail"]?.stringValue?.contains("JSON-RPC message") == true)
            #expect(try await check("GET", "/mcp").status == 200)
        }
    }
}
