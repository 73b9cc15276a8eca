import Foundation

// [[resource]]: the OAuth protected resources Gatehouse fronts (docs/reference.md §17).
extension ConfigurationDecoder {
    /// Keys that only mean something for an MCP server.
    static let mcpOnlyResourceKeys = ["allowed_origins", "max_message_bytes", "session_ttl"]

    /// The resources, each checked, then against each other (no two may claim one request) and the providers (each
    /// authorization server is a configured provider's issuer). Nil entries are left out (their problems are in the sink).
    static func resourceSettings(_ tables: [TOMLReader], providers: [ProviderSettings], sink: ConfigIssueSink) -> [ResourceSettings] {
        let issuers = providers.flatMap(\.declaredIssuers)
        var resources: [ResourceSettings] = []
        for table in tables {
            guard let resource = resourceSettings(table, issuers: issuers) else { continue }
            if let other = resources.firstIndex(where: { $0.overlaps(resource) }) {
                table.report("url", "overlaps resource[\(other)] (\(resources[other].url)): one host's paths may belong to one resource only")
            }
            resources.append(resource)
        }
        return resources
    }

    private static func resourceSettings(_ table: TOMLReader, issuers: [String]) -> ResourceSettings? {
        let issuesBefore = table.sink.issues.count
        let url = table.nonEmptyString("url")
        if !table.contains("url") { table.sink.add(.required(table.keyPath("url"))) }
        let parsed = url.flatMap { text in
            switch ConfigSyntax.baseURL(text) {
            case .success(let parsed): return parsed
            case .failure(let problem):
                table.report("url", problem.message)
                return nil
            }
        }
        let servers = table.strings("authorization_servers")
        if !table.contains("authorization_servers") {
            table.sink.add(.required(table.keyPath("authorization_servers")))
        } else if servers?.isEmpty == true {
            table.report("authorization_servers", "must name at least one authorization server (a [[provider]]'s issuer)")
        }
        for (index, server) in (servers ?? []).enumerated() where !issuers.contains(server) {
            let known = issuers.isEmpty ? "none" : issuers.joined(separator: ", ")
            table.sink.add(.invalid(
                ConfigKeyPath.element(index, of: table.keyPath("authorization_servers")),
                "\(ConfigKeyPath.quoted(server)) is not the issuer of a configured [[provider]] (issuers: \(known))"))
        }
        let scopes = table.strings("scopes_supported")
        let name = table.nonEmptyString("name")
        let mcp = table.bool("mcp") ?? false
        if !mcp {
            for key in mcpOnlyResourceKeys where table.contains(key) {
                table.report(key, "applies only to an MCP server (mcp = true)")
            }
        }
        let origins = table.strings("allowed_origins").map { $0.compactMap { allowedOrigin($0, table) } }
        let forwardToken = table.bool("forward_token")
        let maxMessageBytes = table.byteCount("max_message_bytes", in: 1...(64 << 20))
        let sessionTTL = table.duration("session_ttl")
        if let sessionTTL, sessionTTL <= .zero { table.report("session_ttl", "must be more than 0s") }
        table.finish()
        guard let url, let parsed, let servers, table.sink.issues.count == issuesBefore else { return nil }
        let host = RouteHosts.canonical(parsed.host(percentEncoded: false) ?? "")
        let origin = Self.browserOrigin(of: parsed)
        var path = parsed.path(percentEncoded: true)
        while path.hasSuffix("/") { path.removeLast() }
        var resource = ResourceSettings(url: url, origin: origin, host: host, path: path, authorizationServers: servers)
        resource.scopesSupported = scopes
        resource.name = name
        resource.mcp = mcp
        resource.allowedOrigins = origins ?? []
        resource.forwardToken = forwardToken
        resource.maxMessageBytes = maxMessageBytes ?? resource.maxMessageBytes
        resource.sessionTTL = sessionTTL ?? resource.sessionTTL
        return resource
    }

    /// An `allowed_origins` entry: `scheme://host[:port]`, no path.
    private static func allowedOrigin(_ text: String, _ table: TOMLReader) -> String? {
        guard case .success(let url) = ConfigSyntax.baseURL(text), ["", "/"].contains(url.path(percentEncoded: true)) else {
            table.report("allowed_origins", "\(ConfigKeyPath.quoted(text)) is not an origin (scheme://host[:port], no path)")
            return nil
        }
        return browserOrigin(of: url)
    }

    /// `scheme://host[:port]` of an http(s) URL as a browser sends it in `Origin`: lower case, the default port left out,
    /// an IPv6 host in brackets (unlike `origin(of:)`, the assertion's audience, which keeps the URL's spelling).
    private static func browserOrigin(of url: URL) -> String {
        let scheme = url.scheme?.lowercased() ?? "http"
        let host = (url.host(percentEncoded: false) ?? "").lowercased()
        let hostPart = host.contains(":") ? "[\(host)]" : host
        let defaultPort = scheme == "https" ? 443 : 80
        return scheme + "://" + hostPart + (url.port.map { $0 == defaultPort ? "" : ":\($0)" } ?? "")
    }
}

extension ProviderSettings {
    /// The issuers this provider's settings name: what a resource's `authorization_servers` are compared with. Entra's
    /// issuers depend on the tenant and Kubernetes' on the cluster: those providers are named by their `issuer` only.
    package var declaredIssuers: [String] {
        if let issuer { return [issuer] }
        switch type {
        case .google: return ["https://accounts.google.com"]
        case .apple: return ["https://appleid.apple.com"]
        case .firebase: return projectID.map { ["https://securetoken.google.com/\($0)"] } ?? []
        case .cognito:
            guard let region, let userPoolID else { return [] }
            return ["https://cognito-idp.\(region).amazonaws.com/\(userPoolID)"]
        default: return []
        }
    }
}
