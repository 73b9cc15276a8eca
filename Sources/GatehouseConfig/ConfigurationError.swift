/// One problem in a configuration file, located by its key path.
///
/// Key paths use TOML's own dotted-key syntax so they can be searched for in the file:
/// `listen.address`, `provider[0].audiences` (0-based, in file order), `route[2].providers`,
/// `headers.X-Auth-Email`. A key that is not a bare TOML key (`A-Za-z0-9_-`) is quoted:
/// `headers."X.Custom"`. Problems with one element of an array are reported at the array's
/// key path, the message naming the element. A problem with the file as a whole (unreadable,
/// TOML syntax) has an empty key path, or the file's path.
public struct ConfigurationIssue: Sendable, Equatable, CustomStringConvertible {
    public let keyPath: String
    public let message: String

    public init(keyPath: String, message: String) {
        self.keyPath = keyPath
        self.message = message
    }

    /// `provider[1].audiences: required for type "google"`, or just the message when there is no key path.
    public var description: String { keyPath.isEmpty ? message : "\(keyPath): \(message)" }
}

/// Every problem found in a configuration, not only the first: an operator fixes them in one go.
public struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    public let issues: [ConfigurationIssue]

    public init(issues: [ConfigurationIssue]) {
        self.issues = issues
    }

    /// One issue per line, in the order they were found.
    public var description: String { issues.map(\.description).joined(separator: "\n") }
}

// The recurring kinds of issue, so the same problem is always worded the same way.
extension ConfigurationIssue {
    package static func unknownKey(_ keyPath: String, suggestion: String? = nil) -> ConfigurationIssue {
        let hint = suggestion.map { " (did you mean \"\($0)\"?)" } ?? ""
        return ConfigurationIssue(keyPath: keyPath, message: "unknown key\(hint)")
    }

    static func wrongType(_ keyPath: String, expected: String, found: String) -> ConfigurationIssue {
        ConfigurationIssue(keyPath: keyPath, message: "expected \(expected), found \(found)")
    }

    package static func required(_ keyPath: String, because reason: String? = nil) -> ConfigurationIssue {
        ConfigurationIssue(keyPath: keyPath, message: reason.map { "required \($0)" } ?? "required")
    }

    package static func invalid(_ keyPath: String, _ message: String) -> ConfigurationIssue {
        ConfigurationIssue(keyPath: keyPath, message: message)
    }
}
