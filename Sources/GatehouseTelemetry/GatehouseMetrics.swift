import Foundation
import NIOConcurrencyHelpers
public import Prometheus
package import GatehouseVocabulary

/// The Prometheus series of docs/reference.md §9, kept in a registry of this instance's own (not the
/// process-global MetricsSystem), so tests and several servers in one process stay apart.
/// A class: the services hand it to every request's counting, one reference instead of a copy of each series.
public final class GatehouseMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry
    /// `gatehouse_requests_total` by route auth (`routeAuths` order), then outcome (`outcomes` order):
    /// a request counts with two comparisons and an index, no string built or hashed.
    private let requests: [Counter]
    private static let routeAuths = ["public", "optional", "required", "none"]
    private static let outcomes = RequestOutcome.allCases
    /// Series made so far (reasons x configured providers: bounded), so a 401 flood costs a lookup.
    private let authFailures = NIOLockedValueBox<[FailureSeries: Counter]>([:])
    private let cacheHits: Counter
    private let cacheMisses: Counter
    private let rejectedHits: Counter
    /// `gatehouse_accept_errors_total` by listener: the client port and the admin port.
    private let acceptErrors: [String: Counter]
    /// `gatehouse_failure_log_write_errors_total`: failure-log lines not written whole.
    private let failureLogWriteErrors: Counter
    /// `gatehouse_assertion_signatures_total` by result: success, failure.
    private let assertionSignatures: [Counter]
    /// `gatehouse_http2_streams_total`: streams the client port's HTTP/2 door opened (refused ones aside).
    private let http2Streams: Counter
    private let traceSpansExported: Counter
    private let traceSpansDropped: Counter
    package let upstreamDuration: DurationHistogram
    package let authDuration: DurationHistogram
    package let introspectionDuration: DurationHistogram

    public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
        var requests: [Counter] = []
        for auth in Self.routeAuths {
            for outcome in Self.outcomes {
                requests.append(registry.makeCounter(descriptor: MetricHelp.descriptor("gatehouse_requests_total"), labels: [("route_auth", auth), ("outcome", outcome.rawValue)]))
            }
        }
        self.requests = requests
        cacheHits = registry.makeCounter(descriptor: MetricHelp.descriptor("gatehouse_verify_cache_total"), labels: [("result", "hit")])
        cacheMisses = registry.makeCounter(descriptor: MetricHelp.descriptor("gatehouse_verify_cache_total"), labels: [("result", "miss")])
        rejectedHits = registry.makeCounter(descriptor: MetricHelp.descriptor("gatehouse_verify_cache_total"), labels: [("result", "rejected")])
        acceptErrors = Dictionary(uniqueKeysWithValues: ["client", "admin"].map {
            ($0, registry.makeCounter(descriptor: MetricHelp.descriptor("gatehouse_accept_errors_total"), labels: [("listener", $0)]))
        })
        failureLogWriteErrors = registry.makeCounter(descriptor: MetricHelp.descriptor("gatehouse_failure_log_write_errors_total"))
        http2Streams = registry.makeCounter(descriptor: MetricHelp.descriptor("gatehouse_http2_streams_total"))
        traceSpansExported = registry.makeCounter(descriptor: MetricHelp.descriptor("gatehouse_trace_spans_exported_total"))
        traceSpansDropped = registry.makeCounter(descriptor: MetricHelp.descriptor("gatehouse_trace_spans_dropped_total"))
        registry.makeGauge(
            descriptor: MetricHelp.descriptor("gatehouse_build_info"),
            labels: [("version", GatehouseVersion.string), ("revision", GatehouseVersion.revision)]
        ).set(1.0)
        assertionSignatures = ["success", "failure"].map {
            registry.makeCounter(descriptor: MetricHelp.descriptor("gatehouse_assertion_signatures_total"), labels: [("result", $0)])
        }
        let buckets: [Duration] = [
            .microseconds(50), .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1),
            .milliseconds(2.5), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
            .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(5), .seconds(10),
        ]
        upstreamDuration = registry.makeDurationHistogram(descriptor: MetricHelp.descriptor("gatehouse_upstream_request_duration_seconds"), buckets: buckets)
        authDuration = registry.makeDurationHistogram(descriptor: MetricHelp.descriptor("gatehouse_auth_duration_seconds"), buckets: buckets)
        introspectionDuration = registry.makeDurationHistogram(descriptor: MetricHelp.descriptor("gatehouse_introspection_duration_seconds"), buckets: buckets)
    }

    /// - Parameter routeAuth: the matched route's `auth`, or "none" for requests answered before routing.
    package func request(routeAuth: String, outcome: RequestOutcome) {
        guard let auth = Self.routeAuths.firstIndex(of: routeAuth), let outcome = Self.outcomes.firstIndex(of: outcome) else { return }
        requests[auth * Self.outcomes.count + outcome].increment()
    }

    package func authFailure(reason: FailureReason, provider: String?) {
        let key = FailureSeries(reason: reason, provider: provider ?? "")
        if let counter = authFailures.withLockedValue({ $0[key] }) {
            counter.increment()
            return
        }
        let counter = registry.makeCounter(descriptor: MetricHelp.descriptor("gatehouse_auth_failures_total"), labels: [("reason", reason.rawValue), ("provider", key.provider)])
        authFailures.withLockedValue { $0[key] = counter }
        counter.increment()
    }

    /// `gatehouse_backchannel_logouts_total`: back-channel logouts by provider and result (`applied`, `rate_limited`,
    /// `invalid_request`, or the refusal's reason). Rare: the registry finds the series again.
    package func backchannelLogout(provider: String, result: String) {
        registry.makeCounter(
            descriptor: MetricHelp.descriptor("gatehouse_backchannel_logouts_total"), labels: [("provider", provider), ("result", result)]
        ).increment()
    }

    /// One `gatehouse_auth_failures_total` series: found again without building its label list.
    private struct FailureSeries: Hashable {
        var reason: FailureReason
        var provider: String
    }

    package func acceptError(listener: String) {
        acceptErrors[listener]?.increment()
    }

    package func failureLogWriteError() {
        failureLogWriteErrors.increment()
    }

    package func verifyCache(hit: Bool) {
        (hit ? cacheHits : cacheMisses).increment()
    }

    /// One provider's introspection series, made once: a cached token is counted without a registry lookup.
    package struct IntrospectionCounters: Sendable {
        /// `gatehouse_introspection_cache_total`: answered from the cache, or not (a call, a joined call, busy).
        package let hits: Counter
        package let misses: Counter
        /// `gatehouse_introspection_calls_total` by the issuer's answer; `error`: it could not answer usably.
        package let active: Counter
        package let inactive: Counter
        package let errors: Counter
    }

    package func introspectionCounters(provider: String) -> IntrospectionCounters {
        func cache(_ result: String) -> Counter {
            registry.makeCounter(descriptor: MetricHelp.descriptor("gatehouse_introspection_cache_total"), labels: [("provider", provider), ("result", result)])
        }
        func calls(_ result: String) -> Counter {
            registry.makeCounter(descriptor: MetricHelp.descriptor("gatehouse_introspection_calls_total"), labels: [("provider", provider), ("result", result)])
        }
        return IntrospectionCounters(
            hits: cache("hit"), misses: cache("miss"), active: calls("active"), inactive: calls("inactive"), errors: calls("error"))
    }

    package func rejectedCacheHit() {
        rejectedHits.increment()
    }

    package func http2StreamOpened() {
        http2Streams.increment()
    }

    func traceSpansExported(_ count: Int) {
        traceSpansExported.increment(by: Int64(count))
    }

    func traceSpansDropped(_ count: Int) {
        traceSpansDropped.increment(by: Int64(count))
    }

    /// The configuration in use was loaded (at start, or by a reload) at `seconds` since the epoch.
    package func configurationLoaded(at seconds: Double) {
        registry.makeGauge(descriptor: MetricHelp.descriptor("gatehouse_config_last_reload_successful")).set(1.0)
        registry.makeGauge(descriptor: MetricHelp.descriptor("gatehouse_config_last_reload_success_timestamp_seconds")).set(seconds)
    }

    /// A reload brought a file that does not validate: refused, the running configuration stays.
    package func configurationRefused() {
        registry.makeGauge(descriptor: MetricHelp.descriptor("gatehouse_config_last_reload_successful")).set(0.0)
    }

    package func assertionSigned(succeeded: Bool) {
        assertionSignatures[succeeded ? 0 : 1].increment()
    }

    package func jwksFetch(provider: String, succeeded: Bool, keyCount: Int?) {
        registry.makeCounter(descriptor: MetricHelp.descriptor("gatehouse_jwks_fetches_total"), labels: [("provider", provider), ("result", succeeded ? "success" : "failure")]
        ).increment()
        if let keyCount {
            registry.makeGauge(descriptor: MetricHelp.descriptor("gatehouse_jwks_keys"), labels: [("provider", provider)]).set(Double(keyCount))
        }
    }

    /// Prometheus text, with the key ages and the DPoP replay cache's size brought up to date first, then the
    /// standard `process_*` series.
    /// - Parameters:
    ///   - ready: what `/readyz` says; `revocationStoreUp`, `unsavedRevocations`: the revocation store's state
    ///     (docs/reference.md §9).
    package func exposition(
        keyStatus: [ProviderKeyStatus], dpopReplayEntries: Int, ready: Bool, revocationStoreUp: Bool, unsavedRevocations: Int, now: Double
    ) -> [UInt8] {
        registry.makeGauge(descriptor: MetricHelp.descriptor("gatehouse_dpop_replay_entries")).set(Double(dpopReplayEntries))
        registry.makeGauge(descriptor: MetricHelp.descriptor("gatehouse_ready")).set(Double(ready ? 1 : 0))
        registry.makeGauge(descriptor: MetricHelp.descriptor("gatehouse_revocation_store_up")).set(Double(revocationStoreUp ? 1 : 0))
        registry.makeGauge(descriptor: MetricHelp.descriptor("gatehouse_revocation_store_unsaved")).set(Double(unsavedRevocations))
        for status in keyStatus {
            let age = status.lastFetch.map { now - $0.timeIntervalSince1970 } ?? -1
            registry.makeGauge(descriptor: MetricHelp.descriptor("gatehouse_jwks_age_seconds"), labels: [("provider", status.provider)]).set(age)
        }
        return registry.emitToBuffer() + Array(ProcessMetrics.exposition().utf8)
    }
}
