import Foundation
@testable import Gatehouse
import NIOCore
import NIOHTTP1
import Testing
import GatehouseSyntax
import GatehouseConfig

/// `[revocation] store = "postgres://…"` against a real PostgreSQL: two replicas on one database.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct PostgresRevocationTests {
    private static func useStore(_ postgres: TestPostgres) -> (inout Configuration, TestJWKSServer) -> Void {
        { configuration, _ in
            var revocation = RevocationSettings()
            revocation.store = postgres.url
            configuration.revocation = revocation
        }
    }

    /// Polls `path` on `port` with `token` until it is refused; returns how long that took.
    private static func timeUntilRefused(_ env: TestEnvironment, port: Int, token: String, limit: Duration = .seconds(5)) async throws -> Duration? {
        let clock = ContinuousClock()
        let start = clock.now
        while clock.now - start < limit {
            if try await env.request("/x", token: token, port: port).status == 401 { return clock.now - start }
            try await Task.sleep(for: .milliseconds(5))
        }
        return nil
    }

    @Test func aSignOutOnOneReplicaIsEnforcedByTheOtherWithinOneSecond() async throws {
        try await TestPostgres.with { postgres in
            try await TestEnvironment.run(configure: Self.useStore(postgres)) { (env: TestEnvironment) async throws in
                try await env.withReplica { replica in
                    let portB = try #require(replica.proxyAddress?.port)
                    var delays: [Duration] = []
                    for round in 0..<5 {
                        let token = TestSigner.ec.token(claims: Claims.valid(extra: ["jti": .string("fleet-\(round)")]))
                        #expect(try await env.request("/x", token: token, port: portB).status == 200)
                        #expect(try await env.request("/.gatehouse/signout", method: .POST, token: token).status == 200)
                        let delay = try #require(try await Self.timeUntilRefused(env, port: portB, token: token))
                        delays.append(delay)
                    }
                    print("revocation propagation A -> B via PostgreSQL LISTEN/NOTIFY: \(delays.map { "\($0)" }.joined(separator: ", "))")
                    #expect(delays.allSatisfy { $0 < .seconds(1) })

                    // Sign-out everywhere travels the same way, and only covers older tokens.
                    let now = Int64(Date().timeIntervalSince1970)
                    let old = TestSigner.ec.token(claims: Claims.valid(subject: "user-7", extra: ["iat": .number(String(now - 30))]))
                    #expect(try await env.request("/.gatehouse/signout-everywhere", method: .POST, token: old, port: portB).status == 200)
                    let everywhere = try #require(try await Self.timeUntilRefused(env, port: env.port, token: old))
                    #expect(everywhere < .seconds(1))
                    let newer = TestSigner.ec.token(claims: Claims.valid(subject: "user-7", extra: ["iat": .number(String(now + 2))]))
                    #expect(try await env.request("/x", token: newer).status == 200)
                }
            }
        }
    }

    @Test func aReplicaStartedAfterTheSignOutRejectsTheToken() async throws {
        try await TestPostgres.with { postgres in
            try await TestEnvironment.run(configure: Self.useStore(postgres)) { (env: TestEnvironment) async throws in
                let token = TestSigner.rsa.token(claims: Claims.valid())
                #expect(try await env.request("/.gatehouse/signout", method: .POST, token: token).status == 200)
                try await env.withReplica { replica in
                    let port = try #require(replica.proxyAddress?.port)
                    let response = try await env.request("/x", token: token, port: port)
                    #expect(response.json?["reason"] == .string("revoked"))
                    #expect(try await env.request("/x", token: TestSigner.rsa.token(claims: Claims.valid(subject: "u-2")), port: port).status == 200)
                }
            }
        }
    }

    /// R09 on PostgreSQL: a token signed out inside its leeway (past `exp`) is refused by the other replica
    /// and by one started afterwards (which reads the table), not only where it was signed out.
    @Test func aTokenSignedOutInsideItsLeewayIsRefusedByEveryReplica() async throws {
        try await TestPostgres.with { postgres in
            try await TestEnvironment.run(configure: Self.useStore(postgres)) { (env: TestEnvironment) async throws in
                let token = TestSigner.ec.token(claims: Claims.valid(lifetime: -5, extra: ["jti": .string("pg-in-leeway")]))
                try await env.withReplica { replica in
                    let portB = try #require(replica.proxyAddress?.port)
                    #expect(try await env.request("/x", token: token, port: portB).status == 200)
                    #expect(try await env.request("/.gatehouse/signout", method: .POST, token: token).status == 200)
                    #expect(try await Self.timeUntilRefused(env, port: portB, token: token) != nil)
                }
                try await env.withReplica { later in
                    let port = try #require(later.proxyAddress?.port)
                    #expect(try await env.request("/x", token: token, port: port).json?["reason"] == .string("revoked"))
                }
            }
        }
    }

    @Test func postgresStoppingDoesNotStopTheDataPlaneAndNothingIsLost() async throws {
        try await TestPostgres.with { postgres in
            try await TestEnvironment.run(configure: Self.useStore(postgres)) { (env: TestEnvironment) async throws in
                try await env.withReplica { replica in
                    let portB = try #require(replica.proxyAddress?.port)
                    let revokedBefore = TestSigner.ec.token(claims: Claims.valid(extra: ["jti": .string("before-outage")]))
                    #expect(try await env.request("/.gatehouse/signout", method: .POST, token: revokedBefore).status == 200)
                    #expect(try await Self.timeUntilRefused(env, port: portB, token: revokedBefore) != nil)

                    try postgres.stop()
                    // Requests keep being judged on what is known.
                    let valid = TestSigner.ec.token(claims: Claims.valid(subject: "still-here"))
                    for port in [env.port, portB] {
                        #expect(try await env.request("/x", token: valid, port: port).status == 200)
                        #expect(try await env.request("/x", token: revokedBefore, port: port).status == 401)
                    }
                    // A sign-out during the outage: applied here, answered 503 (fleet-wide not guaranteed).
                    let duringOutage = TestSigner.ec.token(claims: Claims.valid(extra: ["jti": .string("during-outage")]))
                    let signout = try await env.request("/.gatehouse/signout", method: .POST, token: duringOutage)
                    #expect(signout.status == 503)
                    #expect(signout.json?["error"] == .string("temporarily_unavailable"))
                    #expect(try await env.request("/x", token: duringOutage).status == 401)
                    #expect(try await env.request("/x", token: duringOutage, port: portB).status == 200)
                    let ready = try await env.admin("/readyz")
                    #expect(ready.status == 200)
                    #expect(ready.json?["revocation_store"]?.objectValue?["connected"] == .bool(false))
                    #expect(ready.json?["revocation_store"]?.objectValue?["unsaved"] == .number("1"))

                    // PostgreSQL back: both replicas reconnect by themselves; the sign-out kept on A reaches B.
                    try postgres.start()
                    #expect(try await Self.timeUntilRefused(env, port: portB, token: duringOutage, limit: .seconds(15)) != nil)
                    let after = try await env.admin("/readyz")
                    #expect(after.json?["revocation_store"]?.objectValue?["connected"] == .bool(true))
                    #expect(after.json?["revocation_store"]?.objectValue?["unsaved"] == .number("0"))
                    #expect(try await env.request("/x", token: valid, port: portB).status == 200)
                }
            }
        }
    }
}
