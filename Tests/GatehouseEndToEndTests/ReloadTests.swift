import Foundation
@testable import Gatehouse
import Testing

/// Configuration reload (SIGHUP calls `reload`): new requests get the new rules at once, requests in
/// flight are not disturbed, and changes that need a restart are reported and left alone.
@Suite(.serialized)
struct ReloadTests {
    @Test func newRouteRuleIsInForceForTheNextRequest() async throws {
        try await TestEnvironment.run(configure: { configuration, _ in
            var open = RouteSettings(match: .prefix("/"))
            open.auth = .public
            configuration.routes = [open]
        }) { (env: TestEnvironment) async throws in
            #expect(try await env.request("/v1/orders").status == 200)
            var next = env.gatehouse.configuration
            next.routes = []
            #expect(env.gatehouse.reload(next).isEmpty)
            #expect(try await env.request("/v1/orders").status == 401)
        }
    }

    @Test func reloadUnderLoadFailsNoRequest() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            let token = TestSigner.ec.token(claims: Claims.valid())
            let statuses = try await withThrowingTaskGroup(of: [Int].self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        var seen: [Int] = []
                        for _ in 0..<60 { seen.append(try await env.request("/v1/orders", token: token).status) }
                        return seen
                    }
                }
                group.addTask {
                    for round in 0..<30 {
                        var next = env.gatehouse.configuration
                        next.headers.mappings.append(HeaderMapping(name: "X-Auth-Round", claimPath: round.isMultiple(of: 2) ? "sub" : "email"))
                        env.gatehouse.reload(next)
                        try await Task.sleep(for: .milliseconds(5))
                    }
                    return []
                }
                return try await group.reduce(into: [Int]()) { $0 += $1 }
            }
            #expect(statuses.count == 240)
            #expect(statuses.allSatisfy { $0 == 200 })
            #expect(env.upstream.last?.value("x-auth-round") != nil)
        }
    }

    @Test func changesThatNeedARestartAreReportedAndKept() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            var next = env.gatehouse.configuration
            next.listen.address = SocketAddressSetting(host: "127.0.0.1", port: 1)
            next.upstream.url = URL(string: "http://127.0.0.1:9")!
            next.upstream.timeout = .seconds(3)
            let needRestart = env.gatehouse.reload(next)
            #expect(needRestart == ["[listen]", "[upstream] url/connect_timeout"])
            // Still the old listener and the old upstream.
            #expect(try await env.request("/v1/orders", token: TestSigner.ec.token(claims: Claims.valid())).status == 200)
        }
    }
}
