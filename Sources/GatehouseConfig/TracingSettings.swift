public import Foundation

/// `[tracing]` (docs/reference.md §16): OpenTelemetry traces exported over OTLP/HTTP. Each key not in the file takes
/// the standard `OTEL_*` variable, then its default; `OTEL_SDK_DISABLED=true` turns tracing off.
public struct TracingSettings: Sendable, Equatable {
    /// Where spans are POSTed: the traces URL itself (`…/v1/traces`).
    public var endpoint: URL
    public var serviceName = "gatehouse"
    /// The share of traces Gatehouse starts that are sampled (0…1).
    public var samplingRatio = 1.0
    /// Whether a caller's sampling decision (`traceparent` flags) is followed (`parentbased_*` samplers).
    public var followsParent = true
    /// Sent with every export (`OTEL_EXPORTER_OTLP_HEADERS`: a collector's API key).
    public var headers: [String: String] = [:]
    /// `OTEL_RESOURCE_ATTRIBUTES`, besides `service.name`.
    public var resourceAttributes: [String: String] = [:]
    public var exportInterval: Duration = .seconds(1)
    public var exportTimeout: Duration = .seconds(5)
    /// Spans waiting for export at most; more are dropped and counted (`gatehouse_trace_spans_dropped_total`).
    public var maxQueueSize = 2048
    public var maxBatchSize = 512

    public init(endpoint: URL) {
        self.endpoint = endpoint
    }
}
