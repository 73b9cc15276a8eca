import Foundation
@testable import Gatehouse
import NIOCore
import NIOHTTP1
import Testing
import GatehouseSyntax
import GatehouseConfig
@testable import GatehouseAuth

/// MCP sessions bound to the identity that made them (docs/reference.md §17.4): another identity presenting the id is
/// answered 404 (as for an ended session) and logged `session_mismatch`, on every method; the owner goes on, steps up,
/// ends it; replicas sharing a store agree. Every request through the doors, the upstream the test server
/// (`x-test-new-session` makes it answer with `Mcp-Session-Id`).
@Suite(.serialized, .timeLimit(.minutes(3)))
struct MCPSessionTests {
    static func token(_ subject: String, scope: String = "mcp:tools") -> String { ProtectedResourceTests.token(scope: scope, subject: subject) }

    static let listing = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}"

    /// A message on the resource, with the session id `session` (and, to make one, `newSession` answered by the upstream).
    static func post(
        _ env: TestEnvironment, token: String?, session: String? = nil, newSession: String? = nil, body: String = listing, port: Int? = nil
    ) async throws -> TestEnvironment.Response {
        var headers = [("Content-Type", "application/json")]
        if let session { headers.append(("Mcp-Session-Id", session)) }
        if let newSession { headers.append(("x-test-new-session", newSession)) }
        return try await env.request("/mcp", method: .POST, token: token, headers: headers, body: body, port: port)
    }

    static func configure(_ configuration: inout Configuration) {
        try! MCPMessageTests.configure(&configuration)
    }

    @Test func aSessionIsItsMakersAndAnotherIdentityGets404OnEveryMethod() async throws {
        try await TestEnvironment.run(configure: { configuration, _ in Self.configure(&configuration) }) { (env: TestEnvironment) async throws in
            let alice = Self.token("alice"), bob = Self.token("bob")
            #expect(try await Self.post(env, token: alice, newSession: "s-1").status == 200)
            env.upstream.reset()
            let refused = try await Self.post(env, token: bob, session: "s-1")
            #expect(refused.status == 404)
            #expect(refused.headers.first(name: "www-authenticate") == nil)
            #expect(refused.json?["error"]?.objectValue?["message"] == .string("Session not found"))
            #expect(refused.json?["reason"] == nil, "the hijacker is told nothing more than for an ended session")
            let line = try #require(env.failureLog.last)
            #expect(line["reason"] == .string("session_mismatch"))
            #expect(line["status"] == .number("404"))
            #expect(line["sub"] == .string("bob"))
            #expect(line["mcp_method"] == .string("tools/list"))
            // The stream and the end of the session alike; no token at all (a public method) too.
            #expect(try await env.request("/mcp", token: bob, headers: [("Mcp-Session-Id", "s-1"), ("Accept", "text/event-stream")]).status == 404)
            #expect(try await env.request("/mcp", method: .DELETE, token: bob, headers: [("Mcp-Session-Id", "s-1")]).status == 404)
            #expect(try await Self.post(env, token: nil, session: "s-1", body: "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}").status == 404)
            #expect(env.failureLog.filter { $0["reason"] == .string("session_mismatch") }.count == 4)
            #expect(env.upstream.requests.isEmpty, "nothing of Bob's reached the server")
            // The owner goes on, and keeps the session when stepping up (a new token, the same subject).
            #expect(try await Self.post(env, token: alice, session: "s-1").status == 200)
            #expect(try await Self.post(env, token: Self.token("alice", scope: "mcp:tools repo:admin"), session: "s-1").status == 200)
            // A refused DELETE by the server keeps the binding; an accepted one by the owner ends it.
            let kept = try await env.request("/mcp", method: .DELETE, token: alice, headers: [("Mcp-Session-Id", "s-1"), ("x-test-status", "405")])
            #expect(kept.status == 405)
            #expect(try await Self.post(env, token: bob, session: "s-1").status == 404)
            #expect(try await env.request("/mcp", method: .DELETE, token: alice, headers: [("Mcp-Session-Id", "s-1")]).status == 200)
            // Unbound now: the first identity the server accepts it for binds it again.
            #expect(try await Self.post(env, token: bob, session: "s-1").status == 200)
            #expect(try await Self.post(env, token: alice, session: "s-1").status == 404)
        }
    }

    @Test func anIdTheServerDidNotAcceptIsNotBound() async throws {
        try await TestEnvironment.run(configure: { configuration, _ in Self.configure(&configuration) }) { (env: TestEnvironment) async throws in
            let carol = Self.token("carol"), dave = Self.token("dave")
            // A server's refusal (400: the id it minted is discarded) binds nothing.
            let refusedByServer = try await env.request("/mcp", method: .POST, token: carol, headers: [
                ("Content-Type", "application/json"), ("x-test-new-session", "s-2"), ("x-test-status", "400"),
            ], body: Self.listing)
            #expect(refusedByServer.status == 400)
            #expect(try await Self.post(env, token: dave, session: "s-2").status == 200)
            #expect(try await Self.post(env, token: carol, session: "s-2").status == 404, "bound to Dave, the first the server accepted")
        }
    }

    /// The MCP configuration on a PostgreSQL store of its own, for replicas to share (`withReplica`).
    static func sharingPostgreSQL(_ body: (TestEnvironment, TestPostgres) async throws -> Void) async throws {
        try await TestPostgres.with { postgres in
            try await TestEnvironment.run(configure: { configuration, _ in
                Self.configure(&configuration)
                var revocation = RevocationSettings()
                revocation.store = postgres.url
                configuration.revocation = revocation
            }) { (env: TestEnvironment) async throws in
                try await body(env, postgres)
            }
        }
    }

    @Test func twoReplicasSharingPostgreSQLAgreeOnWhoOwnsASession() async throws {
        try await Self.sharingPostgreSQL { env, _ in
            try await env.withReplica { replica in
                let portB = try #require(replica.proxyAddress?.port)
                let alice = Self.token("alice"), bob = Self.token("bob")
                #expect(try await Self.post(env, token: alice, newSession: "pg-1").status == 200)
                // On the other replica: refused as soon as the binding has travelled (LISTEN/NOTIFY).
                let clock = ContinuousClock()
                let start = clock.now
                let refused = try await Contract.eventually(timeout: .seconds(5)) {
                    try await Self.post(env, token: bob, session: "pg-1", port: portB).status == 404
                }
                #expect(refused)
                print("MCP session binding A -> B via PostgreSQL: \(clock.now - start)")
                #expect(try await Self.post(env, token: alice, session: "pg-1", port: portB).status == 200)
            }
            // A replica started afterwards reads the binding from the table.
            try await env.withReplica { later in
                let port = try #require(later.proxyAddress?.port)
                #expect(try await Self.post(env, token: Self.token("bob"), session: "pg-1", port: port).status == 404)
            }
        }
    }

    /// A replica binds a session it has not heard of to its first caller at once; when another replica's binding had
    /// reached the store first (its notification still on the way), the store keeps that one, and so must this replica
    /// once told (docs/security.md M15). The race made deterministic: the first owner's row is written behind the
    /// replicas' back, Bob's request binds the id on B alone (the store refuses him), then the store's notification
    /// arrives; before the fix B kept Bob as the owner and refused Alice until the binding expired.
    @Test func aReplicaThatBoundASessionFirstGivesWayToTheOwnerTheStoreKept() async throws {
        try await Self.sharingPostgreSQL { env, postgres in
            try await env.withReplica { replica in
                let portB = try #require(replica.proxyAddress?.port)
                let alice = Self.token("alice"), bob = Self.token("bob")
                let provider = try #require(env.gatehouse.configuration.providers.first?.name)
                let binding = Revocation.session(id: "pg-race", owner: provider + "\n" + "alice", expiresAt: RevocationService.now() + 3600)
                let quoted = { (text: String) in "'" + text.replacingOccurrences(of: "'", with: "''") + "'" }
                // Both replicas have loaded the store (the tables exist): Alice's row written behind their back.
                try postgres.sql("""
                    INSERT INTO gatehouse_mcp_sessions (session_id, owner, expires_at) \
                    VALUES ('pg-race', E\(quoted(provider + "\\n" + "alice")), \(RevocationService.now() + 3600))
                    """)
                #expect(try await Self.post(env, token: bob, session: "pg-race", port: portB).status == 200, "B has not heard of Alice")
                // B's own binding of Bob stands on B until the store's word arrives.
                #expect(try await Self.post(env, token: alice, session: "pg-race", port: portB).status == 404)
                try postgres.sql("SELECT pg_notify('\(PostgresRevocationStore.channel)', \(quoted(binding.notificationPayload)))")
                let agreed = try await Contract.eventually(timeout: .seconds(5)) {
                    try await Self.post(env, token: alice, session: "pg-race", port: portB).status == 200
                }
                #expect(agreed, "B gave way to the owner the store kept")
                #expect(try await Self.post(env, token: bob, session: "pg-race", port: portB).status == 404)
                #expect(try await Self.post(env, token: bob, session: "pg-race").status == 404, "and A agrees")
            }
        }
    }
}
