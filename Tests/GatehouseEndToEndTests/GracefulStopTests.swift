import Foundation
@testable import Gatehouse
import NIOCore
import Testing
import GatehouseConfig

/// Stopping (SIGTERM through the ServiceGroup ends in `stop()`): no new connections, in-flight
/// requests finish within the drain timeout, idle keep-alive connections are closed.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct GracefulStopTests {
    static func slowAndPublic(_ configuration: inout Configuration, _ jwks: TestJWKSServer) {
        var route = RouteSettings(match: .prefix("/"))
        route.auth = .public
        configuration.routes = [route]
        configuration.upstream.timeout = .seconds(5)
    }

    @Test func inFlightRequestFinishesWhileStopping() async throws {
        try await TestEnvironment.run(configure: Self.slowAndPublic) { (env: TestEnvironment) async throws in
            let listener = try #require(env.gatehouse.proxyListener)
            async let slow = env.request("/slow")
            // In flight means at the upstream (under load a fixed sleep could stop an idle connection).
            for _ in 0..<500 where env.upstream.requestCount == 0 { try await Task.sleep(for: .milliseconds(10)) }
            #expect(env.upstream.requestCount == 1)
            let started = ContinuousClock.now
            await env.gatehouse.stop(drainTimeout: .seconds(5))
            let response = try await slow
            #expect(response.status == 200)
            #expect(response.body == "slow")
            #expect(ContinuousClock.now - started < .seconds(4))
            // The listener is closed: no new connection is accepted. (Connecting to its old port
            // would race with parallel tests that may be handed the freed port.)
            #expect(!listener.isActive)
        }
    }

    @Test func drainTimeoutBoundsTheStop() async throws {
        try await TestEnvironment.run(configure: Self.slowAndPublic) { (env: TestEnvironment) async throws in
            async let slow: TestEnvironment.Response? = try? env.request("/slow")
            for _ in 0..<500 where env.upstream.requestCount == 0 { try await Task.sleep(for: .milliseconds(10)) }
            let started = ContinuousClock.now
            await env.gatehouse.stop(drainTimeout: .milliseconds(500))
            #expect(ContinuousClock.now - started < .milliseconds(1500))
            // Past the drain timeout the connection is closed: the client gets no response (the
            // upstream would have answered 200 at 2 s).
            #expect(await slow == nil)
        }
    }

    /// HTTP/2: the stop sends GOAWAY, the stream in flight still gets its whole answer.
    @Test func inFlightHTTP2StreamFinishesWhileStopping() async throws {
        try await TestEnvironment.run(configure: Self.slowAndPublic) { (env: TestEnvironment) async throws in
            let url = env.baseURL + "/slow"
            async let slow = HTTP2Tests.curl(["--http2-prior-knowledge", url])
            for _ in 0..<500 where env.upstream.requestCount == 0 { try await Task.sleep(for: .milliseconds(10)) }
            #expect(env.upstream.requestCount == 1)
            let started = ContinuousClock.now
            await env.gatehouse.stop(drainTimeout: .seconds(5))
            let response = try await slow
            #expect(response.version == "2")
            #expect(response.status == 200)
            #expect(response.body == "slow")
            #expect(ContinuousClock.now - started < .seconds(4))
        }
    }
}
