import Foundation
public import GatehouseConfig

/// TOML snippets the configuration tests build on.
public enum ConfigFixture {
    public static let upstream = """
        [upstream]
        url = "http://127.0.0.1:3000"

        """

    public static let jwksProvider = """
        [[provider]]
        name = "local"
        type = "jwks"
        issuer = "https://issuer.example.test"
        jwks_uri = "http://127.0.0.1:8999/jwks.json"
        audiences = ["orders-api"]

        """

    /// The smallest valid configuration, with `extra` appended (tables after the provider).
    public static func minimal(_ extra: String = "") -> String { upstream + jwksProvider + extra }

    /// The issues `toml` is rejected with; empty if it is accepted.
    public static func issues(_ toml: String) -> [ConfigurationIssue] {
        do {
            _ = try Configuration.parse(toml: toml)
            return []
        } catch {
            return error.issues
        }
    }

    /// The repository's config.example.toml, found from this file's path.
    public static var examplePath: String {
        URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("config.example.toml").path
    }
}
