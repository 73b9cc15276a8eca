import Foundation
@testable import Gatehouse
import NIOHTTP1
import Testing
import GatehouseConfig
import GatehouseTelemetry

/// docs/reference.md §9 (metrics) and §7.2 (the admin port): what a dashboard or an alert written against
/// the reference may count on from the first scrape, and how the admin port answers.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct MetricsContractTests {
    static let routeAuths = ["public", "optional", "required", "none"]
    static let outcomes = ["forwarded", "unauthorized", "forbidden", "unavailable", "bad_request", "upstream_error", "endpoint"]
    static let buckets = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    /// A second provider whose key server is a closed port: it never has keys.
    static func withAKeylessProvider(_ closedPort: Int) -> (inout Configuration, TestJWKSServer) -> Void {
        { configuration, _ in
            var never = ProviderSettings(name: "never", type: .jwks)
            never.issuer = "https://never.test"
            never.jwksURI = URL(string: "http://127.0.0.1:\(closedPort)/jwks.json")!
            never.audiences = [Claims.audience]
            configuration.providers.append(never)
        }
    }

    /// The first scrape, before any request: all 28 `gatehouse_requests_total` series (4 `route_auth` x 7
    /// `outcome`) and both `gatehouse_accept_errors_total` series, at 0, with their documented types;
    /// `gatehouse_jwks_age_seconds` is `-1` for a provider that never had keys, and stays so after its fetches fail.
    @Test func everySeriesTheReferenceListsExistsOnTheFirstScrape() async throws {
        let closed = try await freeLoopbackPort()
        try await TestEnvironment.run(waitForKeys: false, configure: Self.withAKeylessProvider(closed)) { (env: TestEnvironment) async throws in
            let first = MetricsText(try await env.admin("/metrics").body)
            let requests = first.series(named: "gatehouse_requests_total")
            #expect(requests.count == 28, "\(requests.keys.map(\.description).sorted())")
            for auth in Self.routeAuths {
                for outcome in Self.outcomes {
                    #expect(first.value("gatehouse_requests_total", ["route_auth": auth, "outcome": outcome]) == 0,
                            "gatehouse_requests_total{route_auth=\"\(auth)\",outcome=\"\(outcome)\"} on the first scrape")
                }
            }
            for listener in ["client", "admin"] {
                #expect(first.value("gatehouse_accept_errors_total", ["listener": listener]) == 0, "\(listener): \(first.text)")
            }
            #expect(first.value("gatehouse_jwks_age_seconds", ["provider": "never"]) == -1, "\(first.text)")
            // The build: what `gatehouse --version` says.
            #expect(first.value("gatehouse_build_info", ["version": GatehouseVersion.string, "revision": GatehouseVersion.revision]) == 1,
                    "\(first.text)")
            #expect(first.types["gatehouse_build_info"] == "gauge")
            #expect(first.types["gatehouse_requests_total"] == "counter")
            #expect(first.types["gatehouse_accept_errors_total"] == "counter")
            #expect(first.types["gatehouse_jwks_age_seconds"] == "gauge")

            // Once its fetches have failed, the keyless provider is still -1; the other one has an age.
            #expect(await Contract.eventually {
                let text = MetricsText((try? await env.admin("/metrics").body) ?? "")
                return (text.value("gatehouse_jwks_fetches_total", ["provider": "never", "result": "failure"]) ?? 0) >= 1
                    && text.value("gatehouse_jwks_age_seconds", ["provider": "test"]).map { $0 >= 0 } == true
            })
            let later = MetricsText(try await env.admin("/metrics").body)
            #expect(later.value("gatehouse_jwks_age_seconds", ["provider": "never"]) == -1, "\(later.text)")
            let age = try #require(later.value("gatehouse_jwks_age_seconds", ["provider": "test"]))
            #expect(age >= 0 && age < 60)
            #expect(later.value("gatehouse_jwks_keys", ["provider": "test"]) == 3)
        }
    }

    /// The histograms use the documented buckets (seconds), and a forwarded request counts once in each.
    @Test func durationHistogramsUseTheDocumentedBuckets() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            #expect(try await env.request("/v1/orders", token: TestSigner.ec.token(claims: Claims.valid())).status == 200)
            let metrics = MetricsText(try await env.admin("/metrics").body)
            for name in ["gatehouse_upstream_request_duration_seconds", "gatehouse_auth_duration_seconds"] {
                #expect(metrics.types[name] == "histogram", "\(name)")
                let bucketSeries = metrics.series(named: name + "_bucket")
                let bounds = bucketSeries.keys.compactMap { $0.labels["le"] }.filter { $0 != "+Inf" }.compactMap(Double.init).sorted()
                #expect(bounds == Self.buckets, "\(name): \(bucketSeries.keys.map(\.description).sorted())")
                #expect(bucketSeries.count == Self.buckets.count + 1, "\(name): the +Inf bucket too")
                #expect(metrics.value(name + "_count") == 1, "\(name): \(metrics.text)")
            }
            #expect(metrics.value("gatehouse_requests_total", ["route_auth": "required", "outcome": "forwarded"]) == 1)
        }
    }

    /// The admin port: `GET` and `HEAD` only (else 405), unknown paths 404, query strings ignored, and every
    /// answer — 200, 503, 404, 405 — with `Cache-Control: no-store`.
    @Test func theAdminPortAnswers404And405AndNeverLetsAnAnswerBeCached() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            let cases: [(String, HTTPMethod, Int)] = [
                ("/healthz", .GET, 200), ("/readyz", .GET, 200), ("/metrics", .GET, 200), ("/healthz?probe=1", .GET, 200),
                ("/metrics?x=1", .GET, 200), ("/healthz", .HEAD, 200),
                ("/nope", .GET, 404), ("/", .GET, 404), ("/.gatehouse/check", .GET, 404), ("/nope", .HEAD, 404),
                ("/metrics", .POST, 405), ("/healthz", .DELETE, 405), ("/readyz", .PUT, 405),
            ]
            for (path, method, status) in cases {
                let response = try await env.request(path, method: method, port: env.adminPort)
                #expect(response.status == status, "\(method) \(path): \(response.status) \(response.body)")
                #expect(response.headers["cache-control"] == ["no-store"], "\(method) \(path): \(response.headers)")
            }
            #expect(try await env.request("/healthz?probe=1", port: env.adminPort).body == "ok\n")
            // Not ready (503) is not cached either.
            env.jwks.update { $0.status = .internalServerError }
            var unready = env.gatehouse.configuration
            unready.providers[0].name = "renamed"  // a changed provider is fetched again, and fails
            await env.gatehouse.reload(unready)
            let ready = try await env.request("/readyz", port: env.adminPort)
            #expect(ready.status == 503, "\(ready.body)")
            #expect(ready.headers["cache-control"] == ["no-store"])
            #expect(env.upstream.requestCount == 0)
        }
    }
}
