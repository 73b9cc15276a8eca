package import Prometheus

/// `gatehouse_ext_authz_checks_total{protocol, result}` and `gatehouse_ext_authz_check_duration_seconds{protocol}`
/// (docs/reference.md §9): every Check by protocol (`grpc`, `http`) and result (`allow`, `deny`, `invalid`: a
/// CheckRequest that could not be read). In the instance's registry, made once.
package struct ExtAuthzMetrics: Sendable {
    package enum Result: String, CaseIterable {
        case allow, deny, invalid
    }

    private let checks: [String: [Result: Counter]]
    private let durations: [String: DurationHistogram]

    package init(registry: PrometheusCollectorRegistry) {
        var checks: [String: [Result: Counter]] = [:]
        var durations: [String: DurationHistogram] = [:]
        let buckets: [Duration] = [
            .microseconds(25), .microseconds(50), .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1),
            .milliseconds(2.5), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
            .milliseconds(250), .milliseconds(500), .seconds(1),
        ]
        let checksName = MetricNameDescriptor(
            namespace: "gatehouse", subsystem: "ext_authz", metricName: "checks", unitName: "total",
            helpText: "Envoy ext_authz Checks answered, by protocol and result")
        let durationName = MetricNameDescriptor(
            namespace: "gatehouse", subsystem: "ext_authz", metricName: "check_duration", unitName: "seconds",
            helpText: "From a Check's arrival to its answer")
        for protocolName in ["grpc", "http"] {
            var byResult: [Result: Counter] = [:]
            for result in Result.allCases {
                byResult[result] = registry.makeCounter(descriptor: checksName, labels: [("protocol", protocolName), ("result", result.rawValue)])
            }
            checks[protocolName] = byResult
            durations[protocolName] = registry.makeDurationHistogram(descriptor: durationName, labels: [("protocol", protocolName)], buckets: buckets)
        }
        self.checks = checks
        self.durations = durations
    }

    package func checked(protocol protocolName: String, _ result: Result, nanoseconds: Int64) {
        checks[protocolName]?[result]?.increment()
        durations[protocolName]?.recordNanoseconds(nanoseconds)
    }
}
