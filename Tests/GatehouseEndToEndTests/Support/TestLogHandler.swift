import Logging
import NIOConcurrencyHelpers
import GatehouseConfig
import GatehouseTelemetry

/// Gatehouse's operational log (swift-log), kept in memory so a test can assert what the operator
/// is told: each record as `level: message key=value …`, metadata sorted by key.
struct TestLogHandler: LogHandler {
    let records: NIOLockedValueBox<[String]>
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .warning

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let all = metadata.merging(event.metadata ?? [:]) { _, new in new }
        let fields = all.keys.sorted().map { "\($0)=\(all[$0]!)" }  // safe: keys of all
        records.withLockedValue { $0.append(([event.level.rawValue + ": " + event.message.description] + fields).joined(separator: " ")) }
    }
}
