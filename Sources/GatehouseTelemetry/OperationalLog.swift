import Foundation
import Logging
import GatehouseSyntax
public import GatehouseConfig

/// The operational log (stderr): startup, JWKS fetches, reloads. Never the failure log.
public enum OperationalLog {
    /// Installs the process-wide swift-log backend for `[log]`. Call once, at start.
    public static func bootstrap(_ settings: LogSettings) {
        let level = Logger.Level(rawValue: settings.level.rawValue) ?? .info
        LoggingSystem.bootstrap { label in
            var handler: any LogHandler = switch settings.format {
            case .text: StreamLogHandler.standardError(label: label)
            case .json: JSONLogHandler(label: label)
            }
            handler.logLevel = level
            return handler
        }
    }
}

/// One JSON object per line on stderr: `{"ts":…,"level":…,"label":…,"message":…,"gatehouse.provider":…}`.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var fields = [
            "\"ts\":\(FailureEvent.timestamp(Date()).jsonQuoted)",
            "\"level\":\(event.level.rawValue.jsonQuoted)",
            "\"label\":\(label.jsonQuoted)",
            "\"message\":\(event.message.description.jsonQuoted)",
        ]
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        for (key, value) in merged.sorted(by: { $0.key < $1.key }) {
            fields.append("\(key.jsonQuoted):\(value.description.jsonQuoted)")
        }
        FileHandle.standardError.write(Data(("{" + fields.joined(separator: ",") + "}\n").utf8))
    }
}
