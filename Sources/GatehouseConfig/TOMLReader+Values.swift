import TOMLKit

// Typed getters. Each marks its key known, returns nil when the key is absent, and returns nil after
// recording an issue when the value is there but unusable, so the caller keeps its default and goes on.
extension TOMLReader {
    func string(_ key: String) -> String? {
        guard let value = value(key) else { return nil }
        guard let string = value.string else { return wrongType(key, expected: "a string", value) }
        return string
    }

    /// A string that must not be empty: an empty path or name is never what was meant.
    func nonEmptyString(_ key: String) -> String? {
        guard let string = string(key) else { return nil }
        guard !string.isEmpty else {
            report(key, "must not be empty")
            return nil
        }
        return string
    }

    func bool(_ key: String) -> Bool? {
        guard let value = value(key) else { return nil }
        guard let bool = value.bool else { return wrongType(key, expected: "a boolean (true or false)", value) }
        return bool
    }

    func integer(_ key: String, in range: ClosedRange<Int>) -> Int? {
        guard let value = value(key) else { return nil }
        guard let integer = value.int else { return wrongType(key, expected: "an integer", value) }
        guard range.contains(integer) else {
            let bounds = range.upperBound == Int.max
                ? "at least \(range.lowerBound)" : "between \(range.lowerBound) and \(range.upperBound)"
            report(key, "must be \(bounds), found \(integer)")
            return nil
        }
        return integer
    }

    func duration(_ key: String) -> Duration? {
        guard let value = value(key) else { return nil }
        guard let text = value.string else { return wrongType(key, expected: "a duration string such as \"30s\"", value) }
        guard let duration = Duration.parseConfig(text) else {
            report(key, "\(ConfigKeyPath.quoted(text)) is not a duration: use a whole number and ms, s, m or h, e.g. \"500ms\", \"30s\", \"5m\", \"24h\"")
            return nil
        }
        return duration
    }

    /// One of `choices` by raw value, e.g. `format = "json"`. (The settings enums are not `CaseIterable`,
    /// and a conformance cannot be synthesized outside their file, hence the explicit list.)
    func choice<T: RawRepresentable>(_ key: String, among choices: [T]) -> T? where T.RawValue == String {
        guard let text = string(key) else { return nil }
        guard let choice = choices.first(where: { $0.rawValue == text }) else {
            let allowed = choices.map(\.rawValue).joined(separator: " | ")
            report(key, "must be one of \(allowed), found \(ConfigKeyPath.quoted(text))")
            return nil
        }
        return choice
    }

    /// An array of non-empty strings. An element that is not one is reported at the array's key path.
    func strings(_ key: String) -> [String]? {
        guard let value = value(key) else { return nil }
        guard let array = value.array else { return wrongType(key, expected: "an array of strings", value) }
        var result: [String] = []
        var valid = true
        for (index, element) in array.enumerated() {
            if let string = element.string, !string.isEmpty {
                result.append(string)
            } else {
                valid = false
                let problem = element.string == nil ? "expected a string, found \(Self.typeName(element.type))" : "must not be empty"
                report(key, "element \(index): \(problem)")
            }
        }
        return valid ? result : nil
    }

    /// The sub-table at `key` as a reader of its own; call its `finish()` when done with it.
    func table(_ key: String) -> TOMLReader? {
        guard let value = value(key) else { return nil }
        guard let table = value.table else { return wrongType(key, expected: "a table", value) }
        return TOMLReader(table: table, path: keyPath(key), sink: sink)
    }

    /// The elements of an array of tables (`[[provider]]`), each a reader with path `provider[i]`.
    func tables(_ key: String) -> [TOMLReader]? {
        guard let value = value(key) else { return nil }
        guard let array = value.array else { return wrongType(key, expected: "an array of tables ([[\(key)]])", value) }
        var readers: [TOMLReader] = []
        for (index, element) in array.enumerated() {
            let path = ConfigKeyPath.element(index, of: keyPath(key))
            if let table = element.table {
                readers.append(TOMLReader(table: table, path: path, sink: sink))
            } else {
                sink.add(.wrongType(path, expected: "a table ([[\(key)]])", found: Self.typeName(element.type)))
            }
        }
        return readers
    }

    private func wrongType<T>(_ key: String, expected: String, _ value: any TOMLValueConvertible) -> T? {
        sink.add(.wrongType(keyPath(key), expected: expected, found: Self.typeName(value.type)))
        return nil
    }

    static func typeName(_ type: TOMLType) -> String {
        switch type {
        case .bool: "boolean"
        case .array: "array"
        default: type.description
        }
    }
}
