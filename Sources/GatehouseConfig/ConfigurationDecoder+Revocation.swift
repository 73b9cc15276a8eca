import Foundation

// [revocation]: where signed-out tokens are remembered, and the store's secret.
extension ConfigurationDecoder {
    static func revocationSettings(_ table: TOMLReader) -> RevocationSettings {
        var settings = RevocationSettings()
        settings.store = table.parsed("store", revocationStore) ?? settings.store
        settings.password = secretSetting(table, "password")
        if settings.password != nil, !isPostgres(settings.store) {
            table.report(table.contains("password") ? "password" : "password_file", "only used by a postgres:// store")
        }
        table.finish()
        return settings
    }

    /// A secret given as `key` (inline, or `"env:NAME"`) or `key_file`, never both.
    static func secretSetting(_ table: TOMLReader, _ key: String) -> SecretSetting? {
        if table.contains(key), table.contains(key + "_file") {
            table.report(key + "_file", "give either \(key) or \(key)_file, not both")
            return nil
        }
        if let file = table.nonEmptyString(key + "_file") { return .file(file) }
        return table.nonEmptyString(key).flatMap { secret($0, key: key, table: table) }
    }

    /// `password = "env:NAME"` names an environment variable; anything else is the secret itself.
    static func secret(_ text: String, key: String, table: TOMLReader) -> SecretSetting? {
        guard text.hasPrefix("env:") else { return .inline(text) }
        let name = String(text.dropFirst("env:".count))
        let validName = name.first.map { !$0.isNumber } == true
            && name.allSatisfy { $0 == "_" || ($0.isASCII && ($0.isLetter || $0.isNumber)) }
        guard validName else {
            table.report(key, "\(ConfigKeyPath.quoted(name)) is not an environment variable name (letters, digits, _)")
            return nil
        }
        return .environment(name)
    }

    private static func isPostgres(_ store: String) -> Bool {
        store.hasPrefix("postgres://") || store.hasPrefix("postgresql://")
    }

    /// `memory`, `sqlite:/path/file.db`, or a `postgres://` URL with a host.
    private static func revocationStore(_ text: String) -> Result<String, InvalidConfigValue> {
        let expected = "must be \"memory\", \"sqlite:/path/file.db\" or \"postgres://user@host/db\""
        if text == "memory" { return .success(text) }
        if text.hasPrefix("sqlite:") {
            return text.count > "sqlite:".count ? .success(text) : .failure(InvalidConfigValue("sqlite: needs a file path: \(expected)"))
        }
        if isPostgres(text) {
            guard let url = URL(string: text, encodingInvalidCharacters: false), let host = url.host, !host.isEmpty else {
                return .failure(InvalidConfigValue("\(ConfigKeyPath.quoted(text)) is not a valid postgres:// URL with a host"))
            }
            return .success(text)
        }
        return .failure(InvalidConfigValue("\(expected), found \(ConfigKeyPath.quoted(text))"))
    }
}
