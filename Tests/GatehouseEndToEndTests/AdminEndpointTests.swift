import Foundation
@testable import Gatehouse
import Testing
import GatehouseSyntax

/// The admin port: liveness, readiness per provider, Prometheus metrics with the docs/reference.md §9 names.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct AdminEndpointTests {
    @Test func healthzAndReadyzReportTheProviders() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            let health = try await env.admin("/healthz")
            #expect(health.status == 200)
            let ready = try await env.admin("/readyz")
            #expect(ready.status == 200)
            let providers = try #require(ready.json?["providers"]?.arrayValue)
            let provider = try #require(providers.first?.objectValue)
            #expect(provider["name"] == .string("test"))
            #expect(provider["keys"] == .number("3"))
            #expect(provider["last_fetch"]?.stringValue != nil)
            #expect(provider["last_error"] == .null)
        }
    }

    @Test func metricsUseTheDocumentedNames() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            _ = try await env.request("/x", token: TestSigner.ec.token(claims: Claims.valid()))
            _ = try await env.request("/x")
            let metrics = try await env.admin("/metrics")
            #expect(metrics.status == 200)
            let text = metrics.body
            #expect(text.contains("gatehouse_requests_total{route_auth=\"required\",outcome=\"forwarded\"} 1"))
            #expect(text.contains("gatehouse_requests_total{route_auth=\"required\",outcome=\"unauthorized\"} 1"))
            #expect(text.contains("gatehouse_auth_failures_total{reason=\"missing_token\",provider=\"\"} 1"))
            #expect(text.contains("gatehouse_jwks_fetches_total{provider=\"test\",result=\"success\"} 1"))
            #expect(text.contains("gatehouse_jwks_keys{provider=\"test\"} 3"))
            #expect(text.contains("gatehouse_jwks_age_seconds{provider=\"test\"}"))
            #expect(text.contains("gatehouse_verify_cache_total{result=\"miss\"} 1"))
            #expect(text.contains("gatehouse_upstream_request_duration_seconds_count 1"))
            #expect(text.contains("gatehouse_auth_duration_seconds_count 2"))
        }
    }

    @Test func adminPathsAreNotServedOnTheClientPort() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            let response = try await env.request("/metrics")
            #expect(response.status == 401)
            let own = try await env.request("/.gatehouse/unknown")
            #expect(own.status == 404)
            try await env.expectNothingReachedUpstream()
        }
    }
}
