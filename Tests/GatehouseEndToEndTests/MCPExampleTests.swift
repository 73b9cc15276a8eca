import Foundation
@testable import Gatehouse
import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import Testing
import GatehouseSyntax

/// `deploy/mcp/gatehouse.toml` run as a user runs it: `gatehouse serve --config` with the file as shipped, only its
/// addresses moved to this machine's (the MCP server, the authorization server, the ports, the resource's origin),
/// in front of the official MCP SDK's server, with the SDK's client finding its token by discovery alone.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct MCPExampleTests {
    static let exampleFile = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("deploy/mcp/gatehouse.toml").path

    @Test func theShippedExampleMakesTheSDKsServerAProtectedResource() async throws {
        let port = try await freeLoopbackPort()
        var adminPort = try await freeLoopbackPort()
        while adminPort == port { adminPort = try await freeLoopbackPort() }
        let origin = "http://127.0.0.1:\(port)"
        let url = origin + "/mcp"
        let peers = try await MCPSDKTests.startPeers(resource: url, upstreamHTTP2: false)
        defer { peers.stop() }
        let directory = try Contract.makeDirectory("mcp-example")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let shipped = try String(contentsOfFile: Self.exampleFile, encoding: .utf8)
        let replacements = [
            ("0.0.0.0:8080", "127.0.0.1:\(port)"), ("127.0.0.1:9901", "127.0.0.1:\(adminPort)"),
            ("http://127.0.0.1:3000", "http://127.0.0.1:\(peers.mcpServer.port)"),
            ("https://auth.example.com", peers.issuer), ("https://mcp.example.com", origin),
        ]
        var configuration = shipped
        for (from, to) in replacements {
            #expect(configuration.contains(from), "deploy/mcp/gatehouse.toml no longer has \(from)")
            configuration = configuration.replacingOccurrences(of: from, with: to)
        }
        try configuration.write(toFile: directory + "/gatehouse.toml", atomically: true, encoding: .utf8)
        let output = directory + "/out.log"
        let pid = try ChildProcess.spawn([ServedGatehouse.executable, "serve", "--config", directory + "/gatehouse.toml"], outputPath: output)
        defer { ChildProcess.stop(pid) }
        let ready = await Contract.eventually(timeout: .seconds(60)) { (try? await ServedGatehouse.admin(adminPort, "/readyz").status) == 200 }
        try #require(ready, "gatehouse did not become ready: \((try? String(contentsOfFile: output, encoding: .utf8)) ?? "")")

        let report = try await MCPSDKTests.client(url, protocolVersion: "2025", steps: "list,echo,whoami,progress,admin")
        MCPSDKTests.expectServed(report, url: url, user: "alice")
        #expect(report["admin"] == .string("deleted demo"), "step-up on the admin tool: \(report["admin"] ?? .null)")
        let session = try #require(report["session_id"]?.stringValue)
        let alice = try #require(report["access_token"]?.stringValue)
        // Bob's token comes the same way a user's would, by the SDK's flow.
        let bobReport = try await MCPSDKTests.client(url, user: "bob", protocolVersion: "2025", steps: "list")
        let bob = try #require(bobReport["access_token"]?.stringValue)
        let hijack = try await MCPSDKTests.hijack(url, session: session, token: bob, owner: alice)
        #expect(MCPSDKTests.status(hijack, "post") == 404 && MCPSDKTests.status(hijack, "delete") == 404, "\(hijack)")
        #expect(MCPSDKTests.status(hijack, "owner_post") == 200, "\(hijack)")
        // The security team's stream: the refused admin call and the hijack, each with its tool and user.
        let lines = ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").split(separator: "\n")
            .compactMap { try? StrictJSON.parse(Array($0.utf8)).objectValue }.filter { $0["event"] == .string("auth_failure") }
        #expect(lines.contains { $0["reason"] == .string("insufficient_scope") && $0["mcp_name"] == .string("delete_repo") && $0["sub"] == .string("alice") })
        #expect(lines.contains { $0["reason"] == .string("session_mismatch") && $0["sub"] == .string("bob") && $0["status"] == .number("404") })
        // A browser page of another origin is refused; the example's allowed one is not.
        // (The SDK's server judges an Origin it gets too: only Gatehouse's refusal is looked for here.)
        let evil = try await HTTPClientRequests.post(url, token: alice, origin: "https://evil.example")
        #expect(evil.status == 403 && evil.body.contains("origin_not_allowed"), "\(evil)")
        let allowed = try await HTTPClientRequests.post(url, token: alice, origin: "https://app.example.com")
        #expect(!allowed.body.contains("origin_not_allowed"), "\(allowed)")
    }
}

/// One JSON-RPC POST with an `Origin`: its status and body.
enum HTTPClientRequests {
    static func post(_ url: String, token: String, origin: String) async throws -> (status: Int, body: String) {
        let body = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}"
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.headers.add(name: "Origin", value: origin)
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "Accept", value: "application/json, text/event-stream")
        request.headers.add(name: "MCP-Protocol-Version", value: "2025-11-25")
        request.body = .bytes(ByteBuffer(string: body))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
        let bytes = try await response.body.collect(upTo: 1 << 20)
        return (Int(response.status.code), String(buffer: bytes))
    }
}
