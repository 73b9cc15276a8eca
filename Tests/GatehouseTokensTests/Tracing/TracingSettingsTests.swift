import Foundation
import Testing
import TOMLKit
@testable import GatehouseConfig

/// `[tracing]` and the OTEL_* variables that fill what the file leaves out (docs/reference.md §16).
struct TracingSettingsTests {
    static func settings(_ toml: String, environment: [String: String] = [:]) -> (TracingSettings?, [String]) {
        let sink = ConfigIssueSink()
        let table = (try? TOMLTable(string: toml)) ?? TOMLTable()
        let settings = ConfigurationDecoder.tracingSettings(TOMLReader(table: table, path: "tracing", sink: sink), environment: environment)
        return (settings, sink.issues.map(\.description))
    }

    @Test func theFileSaysWhereAndHowMuch() {
        let (settings, issues) = Self.settings("""
            endpoint = "http://collector:4318/v1/traces"
            sampling_ratio = 0.25
            service_name = "orders-gatehouse"
            export_interval = "500ms"
            max_queue_size = 100
            """)
        #expect(issues.isEmpty, "\(issues)")
        #expect(settings?.endpoint.absoluteString == "http://collector:4318/v1/traces" && settings?.samplingRatio == 0.25)
        #expect(settings?.serviceName == "orders-gatehouse" && settings?.exportInterval == .milliseconds(500) && settings?.maxQueueSize == 100)
    }

    @Test func otelVariablesFillWhatTheFileLeavesOut() {
        let (settings, issues) = Self.settings("service_name = \"from-file\"", environment: [
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/", "OTEL_SERVICE_NAME": "from-env",
            "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.1",
            "OTEL_EXPORTER_OTLP_HEADERS": "api-key=s%3Dcret,x-team=auth", "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=prod",
            "OTEL_BSP_SCHEDULE_DELAY": "200", "OTEL_BSP_MAX_QUEUE_SIZE": "4096",
        ])
        #expect(issues.isEmpty, "\(issues)")
        #expect(settings?.endpoint.absoluteString == "http://collector:4318/v1/traces", "a base URL gets /v1/traces")
        #expect(settings?.serviceName == "from-file" && settings?.samplingRatio == 0.1 && settings?.followsParent == true)
        #expect(settings?.headers == ["api-key": "s=cret", "x-team": "auth"] && settings?.resourceAttributes == ["deployment.environment": "prod"])
        #expect(settings?.exportInterval == .milliseconds(200) && settings?.maxQueueSize == 4096)
        let traces = Self.settings("", environment: ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/custom", "OTEL_TRACES_SAMPLER": "always_off"])
        #expect(traces.0?.endpoint.absoluteString == "http://c:4318/custom" && traces.0?.samplingRatio == 0 && traces.0?.followsParent == false)
    }

    @Test(arguments: [
        ("sampling_ratio = 1.5\nendpoint = \"http://c:4318/v1/traces\"", "tracing.sampling_ratio: must be a number from 0 to 1"),
        ("protocol = \"grpc\"\nendpoint = \"http://c:4317\"", "tracing.protocol: \"grpc\" is not supported"),
        ("sampling_ratio = 1", "tracing.endpoint: required"),
        ("endpoint = \"ftp://c\"", "tracing.endpoint: must be an http:// or https:// URL"),
        ("endpoint = \"http://c:4318/v1/traces\"\nexport_interval = \"1ms\"", "tracing.export_interval: must be from 10ms to 5m"),
        ("endpoint = \"http://c:4318/v1/traces\"\nsampler = \"x\"", "tracing.sampler: unknown key"),
    ])
    func aWrongValueIsAnErrorAtItsKey(_ toml: String, _ expected: String) {
        let (_, issues) = Self.settings(toml)
        #expect(issues.contains { $0.hasPrefix(expected) }, "\(issues)")
    }

    @Test func otelSDKDisabledTurnsTracingOff() {
        let toml = "endpoint = \"http://127.0.0.1:4318/v1/traces\""
        #expect(Self.settings(toml).0 != nil)
        #expect(Self.settings(toml, environment: ["OTEL_SDK_DISABLED": "true"]).0 == nil)
        #expect(Self.settings(toml + "\nsampling_ratio = 7", environment: ["OTEL_SDK_DISABLED": "true"]).1.count == 1, "the table is still checked")
    }
}
