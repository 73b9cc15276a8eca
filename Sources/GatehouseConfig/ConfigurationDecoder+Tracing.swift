import Foundation
import TOMLKit
import GatehouseSyntax

// [tracing]: OpenTelemetry traces over OTLP/HTTP (docs/reference.md §16). A key absent from the file takes the
// standard OTEL_* variable (https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/).
extension ConfigurationDecoder {
    static func tracingSettings(_ table: TOMLReader, environment: [String: String] = ProcessInfo.processInfo.environment) -> TracingSettings? {
        func variable(_ names: String...) -> String? {
            names.lazy.compactMap { environment[$0]?.trimmingCharacters(in: .whitespaces) }.first { !$0.isEmpty }
        }
        let protocolName = table.nonEmptyString("protocol") ?? variable("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
        if let protocolName, protocolName != "http/protobuf" {
            table.report("protocol", "\(protocolName.jsonQuoted) is not supported: Gatehouse exports OTLP over HTTP, \"http/protobuf\""
                + " (a collector's port 4318; for gRPC-only backends, an OpenTelemetry Collector in between)")
        }
        var endpoint: URL?
        if let text = table.nonEmptyString("endpoint") {
            endpoint = tracesURL(text, table: table, key: "endpoint", appendPath: false)
        } else if let text = variable("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            endpoint = tracesURL(text, table: table, key: "endpoint", appendPath: false)
        } else if let text = variable("OTEL_EXPORTER_OTLP_ENDPOINT") {
            endpoint = tracesURL(text, table: table, key: "endpoint", appendPath: true)
        } else if !table.contains("endpoint") {
            table.report("endpoint", "required (or OTEL_EXPORTER_OTLP_ENDPOINT): the collector's OTLP/HTTP traces URL, e.g. \"http://127.0.0.1:4318/v1/traces\"")
        }
        var ratio: Double?
        var followsParent = true
        if let value = table.value("sampling_ratio") {
            if let number = value.double ?? value.int.map(Double.init), (0...1).contains(number) {
                ratio = number
            } else {
                table.report("sampling_ratio", "must be a number from 0 to 1")
            }
        } else if let sampler = variable("OTEL_TRACES_SAMPLER") {
            switch sampler {
            case "always_on", "parentbased_always_on": ratio = 1
            case "always_off", "parentbased_always_off": ratio = 0
            case "traceidratio", "parentbased_traceidratio": ratio = variable("OTEL_TRACES_SAMPLER_ARG").flatMap(Double.init).map { min(1, max(0, $0)) } ?? 1
            default: table.report(nil, "OTEL_TRACES_SAMPLER=\(sampler) is not one Gatehouse knows (always_on, always_off, traceidratio and their parentbased_ forms)")
            }
            followsParent = sampler.hasPrefix("parentbased_")
        }
        let serviceName = table.nonEmptyString("service_name") ?? variable("OTEL_SERVICE_NAME")
        let interval = table.duration("export_interval") ?? variable("OTEL_BSP_SCHEDULE_DELAY").flatMap(Int.init).map { Duration.milliseconds($0) }
        let timeout = table.duration("export_timeout")
            ?? variable("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_BSP_EXPORT_TIMEOUT").flatMap(Int.init).map { Duration.milliseconds($0) }
        let queueSize = table.integer("max_queue_size", in: 1...1_000_000) ?? variable("OTEL_BSP_MAX_QUEUE_SIZE").flatMap(Int.init)
        let batchSize = table.integer("max_batch_size", in: 1...100_000) ?? variable("OTEL_BSP_MAX_EXPORT_BATCH_SIZE").flatMap(Int.init)
        for (key, value) in [("export_interval", interval), ("export_timeout", timeout)] {
            if let value, value < .milliseconds(10) || value > .seconds(300) { table.report(key, "must be from 10ms to 5m") }
        }
        table.finish()
        // OTEL_SDK_DISABLED=true turns tracing off whatever the file says (the OpenTelemetry convention); the table is still checked.
        if environment["OTEL_SDK_DISABLED"]?.lowercased() == "true" { return nil }
        guard let endpoint, protocolName == nil || protocolName == "http/protobuf" else { return nil }
        var settings = TracingSettings(endpoint: endpoint)
        if let ratio { settings.samplingRatio = ratio }
        settings.followsParent = followsParent
        if let serviceName { settings.serviceName = serviceName }
        if let interval { settings.exportInterval = interval }
        if let timeout { settings.exportTimeout = timeout }
        if let queueSize { settings.maxQueueSize = max(1, queueSize) }
        if let batchSize { settings.maxBatchSize = max(1, min(batchSize, settings.maxQueueSize)) }
        settings.headers = pairs(variable("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"))
        settings.resourceAttributes = pairs(variable("OTEL_RESOURCE_ATTRIBUTES"))
        return settings
    }

    /// `key=value,key=value`, values percent-decoded (the OTEL_* list form).
    private static func pairs(_ text: String?) -> [String: String] {
        var pairs: [String: String] = [:]
        for item in (text ?? "").split(separator: ",") {
            let parts = item.split(separator: "=", maxSplits: 1)
            guard parts.count == 2 else { continue }
            let key = parts[0].trimmingCharacters(in: .whitespaces)
            let value = String(parts[1]).trimmingCharacters(in: .whitespaces)
            pairs[key] = value.removingPercentEncoding ?? value
        }
        return pairs
    }

    /// An http(s) URL; a base URL (OTEL_EXPORTER_OTLP_ENDPOINT) gets `/v1/traces` appended.
    private static func tracesURL(_ text: String, table: TOMLReader, key: String, appendPath: Bool) -> URL? {
        switch ConfigSyntax.httpURL(text) {
        case .success(let url):
            guard appendPath else { return url }
            return URL(string: (text.hasSuffix("/") ? String(text.dropLast()) : text) + "/v1/traces")
        case .failure(let problem):
            table.report(key, problem.message)
            return nil
        }
    }
}
