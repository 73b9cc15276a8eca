// [failure_log] and [log]: the security team's failure stream and the operational log.
extension ConfigurationDecoder {
    static func failureLogSettings(_ table: TOMLReader) -> FailureLogSettings {
        var settings = FailureLogSettings()
        settings.path = table.nonEmptyString("path") ?? settings.path
        settings.maxLinesPerSecond = table.integer("max_lines_per_second", in: 1...Int.max) ?? settings.maxLinesPerSecond
        settings.pseudonymize = table.bool("pseudonymize") ?? settings.pseudonymize
        settings.pseudonymizeKeyFile = table.nonEmptyString("pseudonymize_key_file")
        if settings.pseudonymize, !table.contains("pseudonymize_key_file") {
            table.sink.add(.required(table.keyPath("pseudonymize_key_file"), because: "when pseudonymize = true"))
        }
        table.finish()
        return settings
    }

    static func logSettings(_ table: TOMLReader) -> LogSettings {
        var settings = LogSettings()
        settings.format = table.choice("format", among: [LogSettings.Format.text, .json]) ?? settings.format
        let levels: [LogSettings.Level] = [.trace, .debug, .info, .notice, .warning, .error, .critical]
        settings.level = table.choice("level", among: levels) ?? settings.level
        table.finish()
        return settings
    }
}
