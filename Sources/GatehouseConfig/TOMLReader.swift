import TOMLKit

/// The issues of one parse, shared by every reader of that parse so nested tables report into one list.
///
/// A class because readers of nested tables all append to it; it never leaves the synchronous parse,
/// so it is not `Sendable`.
final class ConfigIssueSink {
    private(set) var issues: [ConfigurationIssue] = []

    init() {}

    func add(_ issue: ConfigurationIssue) {
        issues.append(issue)
    }
}

/// A cursor over one TOMLKit table that knows its key path.
///
/// Every typed getter records a wrong type as an issue and returns nil, so decoding goes on and finds the
/// next problem. Every key asked for is remembered, present or not; `finish()` then reports each key of the
/// table nobody asked for as unknown, with the closest known key as a hint.
final class TOMLReader {
    /// This table's key path (`""` for the document, `provider[0]`, `provider[0].headers`).
    let path: String
    let sink: ConfigIssueSink
    private let table: TOMLTable
    private var known: [String] = []

    init(table: TOMLTable, path: String, sink: ConfigIssueSink) {
        self.table = table
        self.path = path
        self.sink = sink
    }

    /// The keys present, in TOMLKit's order (sorted by name: toml++ does not keep file order).
    var keys: [String] { table.keys }

    /// Whether the table has `key`; counts as asking for it.
    func contains(_ key: String) -> Bool {
        markKnown(key)
        return table[key] != nil
    }

    func keyPath(_ key: String) -> String { ConfigKeyPath.appending(key, to: path) }

    /// Records an issue at `key` of this table, or at the table itself when `key` is nil.
    func report(_ key: String?, _ message: String) {
        sink.add(.invalid(key.map(keyPath) ?? path, message))
    }

    /// The raw value at `key`, marking it known.
    func value(_ key: String) -> (any TOMLValueConvertible)? {
        markKnown(key)
        return table[key]
    }

    /// Reports every present key that was never asked for; call once the table has been decoded.
    func finish() {
        for key in keys where !known.contains(key) {
            sink.add(.unknownKey(keyPath(key), suggestion: closestKnownKey(to: key)))
        }
    }

    private func markKnown(_ key: String) {
        if !known.contains(key) { known.append(key) }
    }

    /// A known key at most two edits away (a typo such as `audience` or `jwks_url`).
    private func closestKnownKey(to key: String) -> String? {
        let candidates = known.filter { table[$0] == nil }
        let scored = candidates.map { ($0, EditDistance.between($0, key)) }.filter { $0.1 <= 2 }
        return scored.min { $0.1 < $1.1 }?.0
    }
}

/// How key paths are spelled: TOML dotted keys, quoted where a key is not a bare key.
enum ConfigKeyPath {
    static func appending(_ key: String, to base: String) -> String {
        let segment = isBare(key) ? key : quoted(key)
        return base.isEmpty ? segment : "\(base).\(segment)"
    }

    static func element(_ index: Int, of base: String) -> String { "\(base)[\(index)]" }

    static func isBare(_ key: String) -> Bool {
        !key.isEmpty && key.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"): true
            default: false
            }
        }
    }

    /// A TOML basic string, escaped so that a key path is always one printable line.
    static func quoted(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                result += "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count)
                    + String(scalar.value, radix: 16, uppercase: true)
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}

/// Levenshtein distance over Unicode scalars, for "did you mean" hints on short key names.
enum EditDistance {
    static func between(_ a: String, _ b: String) -> Int {
        let a = Array(a.unicodeScalars), b = Array(b.unicodeScalars)
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                let substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)
                current[j] = min(previous[j] + 1, current[j - 1] + 1, substitution)
            }
            previous = current
        }
        return previous[b.count]
    }
}
