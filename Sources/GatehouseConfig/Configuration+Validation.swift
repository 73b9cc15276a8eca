import Foundation

/// Why a configuration value was rejected; becomes the message of a `ConfigurationIssue`.
struct InvalidConfigValue: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

/// The syntax of configuration values: addresses, URLs, header names, claim paths, route paths.
enum ConfigSyntax {
    /// `host:port` with port 0...65535 (0: any free port, for tests); an IPv6 host in brackets, `[::1]:8080`.
    static func socketAddress(_ text: String) -> Result<SocketAddressSetting, InvalidConfigValue> {
        let example = "expected host:port, e.g. \"0.0.0.0:8080\" or \"[::1]:8080\""
        guard let colon = text.lastIndex(of: ":") else { return .failure(InvalidConfigValue("missing port: \(example)")) }
        var host = String(text[..<colon])
        let portText = String(text[text.index(after: colon)...])
        if host.hasPrefix("[") {
            guard host.hasSuffix("]"), host.count > 2 else { return .failure(InvalidConfigValue("unclosed IPv6 bracket: \(example)")) }
            host = String(host.dropFirst().dropLast())
            guard host.contains(":"), host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else {
                return .failure(InvalidConfigValue("\(ConfigKeyPath.quoted(host)) is not an IPv6 address"))
            }
        } else {
            guard !host.isEmpty else { return .failure(InvalidConfigValue("missing host: \(example)")) }
            guard !host.contains(":") else { return .failure(InvalidConfigValue("an IPv6 host needs brackets, e.g. \"[::1]:8080\"")) }
            guard isHostName(host) else { return .failure(InvalidConfigValue("\(ConfigKeyPath.quoted(host)) is not a host name or IP address")) }
        }
        guard !portText.isEmpty, portText.count <= 5, portText.allSatisfy(\.isASCIIDigit), let port = Int(portText), port <= 65535 else {
            return .failure(InvalidConfigValue("port must be a number from 0 to 65535, found \(ConfigKeyPath.quoted(portText))"))
        }
        return .success(SocketAddressSetting(host: host, port: port))
    }

    /// An absolute `http://` or `https://` URL with a host, a valid port and no `user:password@`
    /// (URLs end up in logs and the check-config summary).
    static func httpURL(_ text: String) -> Result<URL, InvalidConfigValue> {
        guard !text.contains(where: { $0.isWhitespace || $0.asciiValue.map { $0 < 0x20 || $0 == 0x7F } == true }),
              let url = URL(string: text, encodingInvalidCharacters: false)
        else { return .failure(InvalidConfigValue("\(ConfigKeyPath.quoted(text)) is not a valid URL")) }
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            return .failure(InvalidConfigValue("must be an http:// or https:// URL, found \(ConfigKeyPath.quoted(text))"))
        }
        guard let host = url.host, !host.isEmpty else { return .failure(InvalidConfigValue("must have a host, found \(ConfigKeyPath.quoted(text))")) }
        guard url.user == nil, url.password == nil else {
            return .failure(InvalidConfigValue("must not contain user:password@ (it would be logged); use a secret setting instead"))
        }
        if let port = url.port, !(1...65535).contains(port) {
            return .failure(InvalidConfigValue("port must be from 1 to 65535, found \(port)"))
        }
        return .success(url)
    }

    /// An `httpURL` without `?query` or `#fragment`, which have no meaning for a base URL or issuer.
    static func baseURL(_ text: String) -> Result<URL, InvalidConfigValue> {
        httpURL(text).flatMap { url in
            url.query != nil || url.fragment != nil || text.contains("?") || text.contains("#")
                ? .failure(InvalidConfigValue("must not have a query (?) or fragment (#)")) : .success(url)
        }
    }

    /// An OIDC issuer: https, or http only on loopback for local testing (discovery over plain http
    /// elsewhere would let anyone on the path hand out keys).
    static func oidcIssuer(_ text: String) -> Result<String, InvalidConfigValue> {
        baseURL(text).flatMap { url in
            let loopback = ["127.0.0.1", "localhost", "::1", "[::1]"].contains(url.host?.lowercased() ?? "")
            return url.scheme?.lowercased() == "https" || loopback
                ? .success(text) : .failure(InvalidConfigValue("must be an https:// URL (http:// only for 127.0.0.1, localhost or [::1])"))
        }
    }

    /// RFC 9110 `token`: the syntax of header field names and method names.
    static func isToken(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                true
            default:
                "!#$%&'*+-.^_`|~".utf8.contains(byte)
            }
        }
    }

    /// A claim path: dot-separated names (`sub`, `address.country`), none of them empty.
    static func claimPathProblem(_ path: String) -> String? {
        if path.isEmpty { return "the claim path must not be empty" }
        if path.split(separator: ".", omittingEmptySubsequences: false).contains(where: \.isEmpty) {
            return "claim path \(ConfigKeyPath.quoted(path)) has an empty segment"
        }
        return nil
    }

    /// A route path or prefix in the form requests are normalized to before matching (docs/reference.md §5):
    /// one that is not could never match, which on a public route is harmless but on a protected one hides a mistake.
    static func routePathProblem(_ path: String) -> String? {
        guard path.hasPrefix("/") else { return "must start with \"/\"" }
        guard path.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) else {
            return "must contain only visible ASCII characters (percent-encode others)"
        }
        guard !path.contains("?"), !path.contains("#") else { return "must be a path only, without ? or #" }
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        guard !segments.dropLast().contains(where: \.isEmpty) else { return "must not contain \"//\"" }
        guard !segments.contains(where: { $0 == "." || $0 == ".." }) else { return "must not contain \".\" or \"..\" segments" }
        return nil
    }

    /// A DNS name or IPv4 literal: letters, digits, `.`, `-`, `_`.
    static func isHostName(_ host: String) -> Bool {
        !host.isEmpty && host.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: "_"): true
            default: false
            }
        }
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}

extension TOMLReader {
    /// A string at `key` run through `parse`; a failure is reported at the key.
    func parsed<T>(_ key: String, _ parse: (String) -> Result<T, InvalidConfigValue>) -> T? {
        guard let text = string(key) else { return nil }
        switch parse(text) {
        case .success(let value): return value
        case .failure(let error):
            report(key, error.message)
            return nil
        }
    }
}
