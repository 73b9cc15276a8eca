import AsyncHTTPClient
import Foundation
@testable import Gatehouse
import NIOCore
import NIOHTTP1
import Testing
import GatehouseSyntax
import GatehouseConfig

/// The official MCP Python SDK (`mcp` on PyPI), unmodified, on both sides of Gatehouse (docs/reference.md §17): its
/// MCP server (Streamable HTTP, no auth of its own) is the upstream; its client with its OAuth support points at
/// Gatehouse and must get a token by discovery alone (the 401's `resource_metadata`, RFC 9728, RFC 8414, dynamic
/// registration, PKCE with the RFC 8707 `resource`) from an authorization server made of the SDK's own handlers, list
/// and call tools, get progress notifications as they are sent, step up on the admin tool's 403; another user riding
/// its session gets 404 while it goes on. Resources/mcp/ holds the Python programs.
@Suite(.serialized, .timeLimit(.minutes(4)))
struct MCPSDKTests {
    /// The Python programs of one run: the authorization server and the MCP server, stopped at the end.
    struct Peers {
        let authorizationServer: (pid: pid_t, port: Int)
        let mcpServer: (pid: pid_t, port: Int)
        var issuer: String { "http://127.0.0.1:\(authorizationServer.port)" }

        func stop() {
            ChildProcess.stop(authorizationServer.pid)
            ChildProcess.stop(mcpServer.pid)
        }
    }

    static func startPeers(resource: String, upstreamHTTP2: Bool) async throws -> Peers {
        let what = "(are mcp and hypercorn installed? scripts/test.sh installs them)"
        let authorization = try await PythonPeer.startServer("mcp", "authorization_server.py", ["--resource", resource],
                                                             what: "the MCP SDK authorization server \(what)")
        do {
            let server = try await PythonPeer.startServer("mcp", "mcp_server.py", upstreamHTTP2 ? ["--http2"] : [], what: "the MCP SDK server \(what)")
            return Peers(authorizationServer: authorization, mcpServer: server)
        } catch {
            ChildProcess.stop(authorization.0)
            throw error
        }
    }

    /// Gatehouse on `port` in front of the SDK's server: the resource at `/mcp`, its authorization server a provider;
    /// `delete_*` tools need `repo:admin`.
    static func configure(_ configuration: inout Configuration, peers: Peers, port: Int, upstreamHTTP2: Bool, store: String? = nil) {
        let resource = "http://127.0.0.1:\(port)/mcp"
        configuration.listen.address = SocketAddressSetting(host: "127.0.0.1", port: port)
        configuration.upstream.url = URL(string: "http://127.0.0.1:\(peers.mcpServer.port)")!
        configuration.upstream.protocolVersion = upstreamHTTP2 ? .http2 : .http1
        configuration.upstream.timeout = .seconds(10)
        var provider = ProviderSettings(name: "mcp-as", type: .jwks)
        provider.issuer = peers.issuer
        provider.jwksURI = URL(string: peers.issuer + "/jwks")!
        provider.audiences = ["mcp-as-clients"]  // not the resource's: a resource needs none listed
        configuration.providers.append(provider)
        var settings = ResourceSettings(
            url: resource, origin: "http://127.0.0.1:\(port)", host: "127.0.0.1", path: "/mcp", authorizationServers: [peers.issuer])
        settings.mcp = true
        settings.name = "SDK tools"
        settings.scopesSupported = ["mcp:tools", "repo:admin"]
        configuration.resources = [settings]
        var admin = RouteSettings(match: .prefix("/mcp"))
        admin.mcpTools = ["delete_*"]
        admin.scopes = ["mcp:tools", "repo:admin"]
        var tools = RouteSettings(match: .prefix("/mcp"))
        tools.scopes = ["mcp:tools"]
        configuration.routes = [admin, tools]
        if let store {
            var revocation = RevocationSettings()
            revocation.store = store
            configuration.revocation = revocation
        }
    }

    /// Gatehouse in front of fresh peers; `body` gets the environment, the peers and the MCP endpoint's URL.
    static func run(
        upstreamHTTP2: Bool = false, store: String? = nil, _ body: (TestEnvironment, Peers, String) async throws -> Void
    ) async throws {
        let port = try await freeLoopbackPort()
        let url = "http://127.0.0.1:\(port)/mcp"
        let peers = try await startPeers(resource: url, upstreamHTTP2: upstreamHTTP2)
        defer { peers.stop() }
        try await TestEnvironment.run(configure: { configuration, _ in
            configure(&configuration, peers: peers, port: port, upstreamHTTP2: upstreamHTTP2, store: store)
        }) { (env: TestEnvironment) async throws in
            try await body(env, peers, url)
        }
    }

    /// The SDK's client, run to its end: its report.
    static func client(_ url: String, user: String = "alice", protocolVersion: String, http2: Bool = false, steps: String) async throws
        -> [String: JSONValue]
    {
        let flags = FileManager.default.temporaryDirectory.appendingPathComponent("mcp-flags-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: flags, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: flags) }
        var arguments = ["--url", url, "--user", user, "--protocol", protocolVersion, "--steps", steps, "--flag-dir", flags,
                         "--keep-session", "--print-token"]
        if http2 { arguments.append("--http2") }
        return try await PythonPeer.runJSON("mcp", "mcp_client.py", arguments)
    }

    /// A token of the authorization server for `subject`, made without the flow (the other user of a hijack).
    static func mint(_ env: TestEnvironment, peers: Peers, subject: String, audience: String) async throws -> String {
        var request = HTTPClientRequest(url: peers.issuer + "/mint")
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: JSONValue.object([
            "sub": .string(subject), "aud": .string(audience), "scope": .string("mcp:tools"),
        ]).compactJSON))
        let response = try await env.client.execute(request, timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 1 << 20)
        return try #require(StrictJSON.parse(Array(body.readableBytesView)).objectValue?["access_token"]?.stringValue)
    }

    /// Bob's requests with Alice's session id, then Alice's: hijack.py's report.
    static func hijack(_ url: String, session: String, token: String, owner: String, http2: Bool = false) async throws -> [String: JSONValue] {
        var arguments = ["--url", url, "--session-id", session, "--token", token, "--owner-token", owner]
        if http2 { arguments.append("--http2") }
        return try await PythonPeer.runJSON("mcp", "hijack.py", arguments)
    }

    static func status(_ report: [String: JSONValue], _ name: String) -> Int64? { report[name]?.objectValue?["status"]?.integerValue }

    /// What every run of the client must show: tools listed and called, who the server was told the caller is (and
    /// not the token), progress as it was sent, the token's audience the resource.
    static func expectServed(_ report: [String: JSONValue], url: String, user: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let tools = report["tools"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(Set(tools) == ["delete_repo", "echo", "progress_then_wait", "whoami"], "\(report)", sourceLocation: sourceLocation)
        #expect(report["echo"] == .string("hello through gatehouse"), sourceLocation: sourceLocation)
        let whoami = report["whoami"]?.objectValue ?? [:]
        #expect(whoami["authorization_present"] == .bool(false), "the token never reaches the server: \(whoami)", sourceLocation: sourceLocation)
        #expect(whoami["x-auth-subject"] == .string(user), "\(whoami)", sourceLocation: sourceLocation)
        #expect(report["progress"]?.objectValue?["result"] == .string("released"), "progress streamed as sent: \(report["progress"] ?? .null)",
                sourceLocation: sourceLocation)
        #expect(report["token_audience"] == .string(url), sourceLocation: sourceLocation)
    }

    @Test func theSDKsClientFindsItsTokenStepsUpAndKeepsItsSessionFromAnotherUser() async throws {
        try await Self.run { env, peers, url in
            let report = try await Self.client(url, protocolVersion: "2025", steps: "list,echo,whoami,progress,admin")
            Self.expectServed(report, url: url, user: "alice")
            #expect(report["protocol_version"] == .string("2025-11-25"))
            // Step-up: the admin tool's 403 named repo:admin; the SDK authorized again with it and the call went through.
            #expect(report["admin"] == .string("deleted demo"), "\(report["admin"] ?? .null)")
            let scopes = report["authorizations"]?.arrayValue?.compactMap { $0.objectValue?["scope"]?.stringValue } ?? []
            #expect(scopes == ["mcp:tools", "mcp:tools repo:admin"], "\(scopes)")
            let refusal = try #require(env.failureLog.first { $0["reason"] == .string("insufficient_scope") })
            #expect(refusal["mcp_method"] == .string("tools/call") && refusal["mcp_name"] == .string("delete_repo"))
            // Another user of the same authorization server rides Alice's session: 404 on every method; Alice goes on.
            let session = try #require(report["session_id"]?.stringValue)
            let alice = try #require(report["access_token"]?.stringValue)
            let bob = try await Self.mint(env, peers: peers, subject: "bob", audience: url)
            let hijack = try await Self.hijack(url, session: session, token: bob, owner: alice)
            #expect(Self.status(hijack, "post") == 404 && Self.status(hijack, "get") == 404 && Self.status(hijack, "delete") == 404, "\(hijack)")
            #expect(Self.status(hijack, "owner_post") == 200, "\(hijack)")
            #expect(env.failureLog.filter { $0["reason"] == .string("session_mismatch") && $0["sub"] == .string("bob") }.count == 3)
            // A token the same server issued for another resource is refused here.
            let sibling = try await Self.mint(env, peers: peers, subject: "alice", audience: "http://127.0.0.1:1/other")
            let refused = try await Self.hijack(url, session: session, token: sibling, owner: alice)
            #expect(Self.status(refused, "post") == 401)
        }
    }

    @Test func theStatelessRevisionOverHTTP2() async throws {
        try await Self.run(upstreamHTTP2: true) { env, _, url in
            let report = try await Self.client(url, protocolVersion: "default", http2: true, steps: "list,echo,whoami,progress,admin")
            Self.expectServed(report, url: url, user: "alice")
            #expect(report["protocol_version"] == .string("2026-07-28"))
            #expect(report["session_id"] == .null)
            #expect(report["admin"] == .string("deleted demo"))
            let versions = Set(report["http"]?.arrayValue?.compactMap { entry -> String? in
                guard let object = entry.objectValue, object["url"]?.stringValue?.hasPrefix(url) == true else { return nil }
                return object["version"]?.stringValue
            } ?? [])
            #expect(versions == ["HTTP/2"], "the client spoke HTTP/2 to Gatehouse: \(versions)")
        }
    }

    @Test func theSessionHandshakeOverHTTP2() async throws {
        try await Self.run(upstreamHTTP2: true) { env, peers, url in
            let report = try await Self.client(url, protocolVersion: "2025", http2: true, steps: "list,echo,whoami,progress")
            Self.expectServed(report, url: url, user: "alice")
            let session = try #require(report["session_id"]?.stringValue)
            let bob = try await Self.mint(env, peers: peers, subject: "bob", audience: url)
            let hijack = try await Self.hijack(url, session: session, token: bob, owner: try #require(report["access_token"]?.stringValue), http2: true)
            #expect(Self.status(hijack, "post") == 404 && Self.status(hijack, "owner_post") == 200, "\(hijack)")
        }
    }

    @Test func aSessionMadeThroughOneReplicaCannotBeTakenThroughAnother() async throws {
        try await TestPostgres.with { postgres in
            try await Self.run(store: postgres.url) { env, peers, url in
                try await env.withReplica(onAnyPort: true) { replica in
                    let portB = try #require(replica.proxyAddress?.port)
                    let report = try await Self.client(url, protocolVersion: "2025", steps: "list,echo")
                    let session = try #require(report["session_id"]?.stringValue)
                    let alice = try #require(report["access_token"]?.stringValue)
                    let bob = try await Self.mint(env, peers: peers, subject: "bob", audience: url)
                    // Replica B serves the same resource on its own port; the session's binding came by the store.
                    let throughB = url.replacingOccurrences(of: ":\(env.port)/", with: ":\(portB)/")
                    let clock = ContinuousClock()
                    let start = clock.now
                    var hijack: [String: JSONValue] = [:]
                    repeat {
                        hijack = try await Self.hijack(throughB, session: session, token: bob, owner: alice)
                    } while Self.status(hijack, "post") != 404 && clock.now - start < .seconds(5)
                    #expect(Self.status(hijack, "post") == 404 && Self.status(hijack, "get") == 404, "\(hijack)")
                    #expect(Self.status(hijack, "owner_post") == 200, "\(hijack)")
                }
            }
        }
    }
}
