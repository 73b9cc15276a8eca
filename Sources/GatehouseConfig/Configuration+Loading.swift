import Foundation
import TOMLKit

extension Configuration {
    /// Parses and validates a TOML configuration (docs/reference.md §3).
    ///
    /// Throws every problem found, each with its key path, not just the first. Note that TOMLKit does not
    /// keep the order of keys within a table, so `[headers]` mappings come out sorted by header name.
    public static func parse(toml: String) throws(ConfigurationError) -> Configuration {
        if let issue = nulEscapeIssue(in: toml) { throw ConfigurationError(issues: [issue]) }
        let table: TOMLTable
        do {
            table = try TOMLTable(string: toml)
        } catch let error as TOMLParseError {
            let position = error.source.begin
            let message = "TOML syntax error at line \(position.line), column \(position.column): \(error.description)"
            throw ConfigurationError(issues: [.invalid("", message)])
        } catch {
            throw ConfigurationError(issues: [.invalid("", "TOML syntax error: \(error)")])
        }
        let sink = ConfigIssueSink()
        let configuration = ConfigurationDecoder.decode(TOMLReader(table: table, path: "", sink: sink))
        guard sink.issues.isEmpty, let configuration else {
            throw ConfigurationError(issues: sink.issues.isEmpty ? [.invalid("", "invalid configuration")] : sink.issues)
        }
        return configuration
    }

    /// Reads and parses the file at `path`. An unreadable or non-UTF-8 file is one issue whose key path is `path`.
    public static func load(fromFile path: String) throws(ConfigurationError) -> Configuration {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            let reason = (error as NSError).userInfo[NSUnderlyingErrorKey].map { "\($0)" } ?? error.localizedDescription
            throw ConfigurationError(issues: [.invalid(path, "cannot read the configuration file: \(reason)")])
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw ConfigurationError(issues: [.invalid(path, "the configuration file is not valid UTF-8")])
        }
        return try parse(toml: text)
    }

    /// TOMLKit hands strings over as C strings, so a `\u0000` escape would silently cut a value short
    /// (`"sub\u0000x"` read as `"sub"`). Rather than act on a value other than the one written, refuse it.
    private static func nulEscapeIssue(in toml: String) -> ConfigurationIssue? {
        for (index, line) in toml.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
        where line.contains("\\u0000") || line.contains("\\U00000000") {
            return .invalid("", "line \(index + 1): strings must not contain NUL (\\u0000)")
        }
        return nil
    }
}

/// Turns the document's tables into a `Configuration`, section by section; every problem goes to the sink.
enum ConfigurationDecoder {
    static func decode(_ root: TOMLReader) -> Configuration? {
        let listen = root.table("listen").map(listenSettings) ?? ListenSettings()
        let admin = root.table("admin").map(adminSettings) ?? AdminSettings()
        // Without [upstream], Gatehouse is an authorizer only: it needs [ext_authz] then.
        let authorizerOnly = !root.contains("upstream") && root.contains("ext_authz")
        var upstream = root.table("upstream").flatMap(upstreamSettings)
        if !root.contains("upstream") && !authorizerOnly {
            root.sink.add(.required("upstream", because: "([upstream] with url, or [ext_authz] for an authorizer only)"))
        }
        if authorizerOnly { upstream = UpstreamSettings.none }
        let failureLog = root.table("failure_log").map(failureLogSettings) ?? FailureLogSettings()
        let log = root.table("log").map(logSettings) ?? LogSettings()
        let verification = root.table("verification").map(verificationSettings) ?? VerificationSettings()
        let jwks = root.table("jwks").map(jwksSettings) ?? JWKSSettings()
        let headers = root.table("headers").map { headerSettings($0, maxHeaderBytes: listen.maxHeaderBytes) } ?? HeaderSettings()
        let providerValue = root.value("provider")
        if providerValue == nil || providerValue?.array?.isEmpty == true {
            root.sink.add(.required("provider", because: "(at least one [[provider]])"))
        }
        let providerReaders = root.tables("provider") ?? []
        var providerNames: [String] = []
        for name in providerReaders.compactMap({ $0.value("name")?.string }) where !providerNames.contains(name) {
            providerNames.append(name)
        }
        let providers = providerSettings(providerReaders, maxHeaderBytes: listen.maxHeaderBytes)
        let resources = resourceSettings(root.tables("resource") ?? [], providers: providers ?? [], sink: root.sink)
        // A rule's `mcp.arguments` is as large as the largest message a resource reads.
        let maxMessageBytes = resources.filter(\.mcp).map(\.maxMessageBytes).max() ?? ResourceSettings.defaultMaxMessageBytes
        let routes = (root.tables("route") ?? []).compactMap {
            routeSettings($0, providerNames: providerNames, maxHeaderBytes: listen.maxHeaderBytes, maxMessageBytes: maxMessageBytes)
        }
        checkIntrospectionRouting(providers ?? [], routes: routes, sink: root.sink)
        let revocation = root.table("revocation").map(revocationSettings)
        let dpop = root.table("dpop").map(dpopSettings) ?? DPoPSettings()
        let extAuthz = root.table("ext_authz").flatMap(extAuthzSettings)
        let tracing = root.table("tracing").flatMap { tracingSettings($0) }
        let assertion = root.table("assertion").flatMap {
            assertionSettings($0, upstreamOrigin: authorizerOnly ? nil : upstream.map { origin(of: $0.url) })
        }
        if let assertion {
            let mappings = headers.mappings + (providers ?? []).flatMap(\.headers)
            checkAssertionHeader(assertion, against: mappings, sink: root.sink)
        }
        checkDistinct(admin: admin.address, listen: listen.address, sink: root.sink)
        if let extAuthz {
            // An authorizer only opens no client port: only the admin port can collide with it.
            let others = authorizerOnly ? [("admin.address", admin.address)] : [("listen.address", listen.address), ("admin.address", admin.address)]
            checkDistinct(extAuthz.address, named: "ext_authz.address", from: others, sink: root.sink)
        }
        root.finish()

        guard let upstream, let providers else { return nil }
        var configuration = Configuration(upstream: upstream, providers: providers)
        configuration.listen = listen
        configuration.admin = admin
        configuration.failureLog = failureLog
        configuration.log = log
        configuration.verification = verification
        configuration.jwks = jwks
        configuration.headers = headers
        configuration.routes = routes
        configuration.resources = resources
        configuration.revocation = revocation
        configuration.dpop = dpop
        configuration.extAuthz = extAuthz
        configuration.assertion = assertion
        configuration.tracing = tracing
        configuration.servesClientPort = !authorizerOnly
        return configuration
    }

    /// The ext_authz port is a port of its own.
    private static func checkDistinct(
        _ address: SocketAddressSetting, named key: String, from others: [(String, SocketAddressSetting)], sink: ConfigIssueSink,
        why: String = ""
    ) {
        let wildcards: Set<String> = ["0.0.0.0", "::", "*"]
        for (otherKey, other) in others where address.port != 0 && address.port == other.port
            && (address.host == other.host || wildcards.contains(address.host) || wildcards.contains(other.host)) {
            sink.add(.invalid(key, "must not share a port with \(otherKey) (\(other))\(why)"))
        }
    }

    /// The admin port serves metrics and readiness and must never be reachable as the client port.
    private static func checkDistinct(admin: SocketAddressSetting, listen: SocketAddressSetting, sink: ConfigIssueSink) {
        checkDistinct(admin, named: "admin.address", from: [("listen.address", listen)], sink: sink,
                      why: ": the admin endpoints never go on the client port")
    }
}
