import GatehouseSyntax
public import GatehouseConfig

/// One `[[resource]]` as requests meet it (docs/reference.md §17): which requests belong to it, the metadata document
/// it publishes (RFC 9728), the challenge its refusals carry, and, for an MCP server, its origins and message bound.
/// Immutable, made once per configuration; a request under it holds it with one retain.
public final class ProtectedResource: Sendable {
    public let settings: ResourceSettings
    /// The url's host as a Host header names it, lower case (an IPv6 literal in brackets).
    let hostName: String
    /// The metadata document, compact JSON (RFC 9728 §2, §3.2).
    public let metadataJSON: String
    /// Whether the client's token reaches the upstream under this resource.
    public let forwardsToken: Bool
    /// The browser origins allowed with `mcp`: the url's own, then `allowed_origins`.
    let origins: [String]

    public init(_ settings: ResourceSettings, providers: [ProviderSettings], upstreamForwardsToken: Bool) {
        self.settings = settings
        hostName = settings.host.contains(":") ? "[\(settings.host)]" : settings.host
        forwardsToken = settings.forwardsToken(upstreamDefault: upstreamForwardsToken)
        origins = [settings.origin] + settings.allowedOrigins
        let servers = providers.filter { provider in provider.declaredIssuers.contains(where: settings.authorizationServers.contains) }
        var document: [String: JSONValue] = [
            "resource": .string(settings.url),
            "authorization_servers": .array(settings.authorizationServers.map(JSONValue.string)),
            "bearer_methods_supported": .array([.string("header")]),
        ]
        if let scopes = settings.scopesSupported { document["scopes_supported"] = .array(scopes.map(JSONValue.string)) }
        if let name = settings.name { document["resource_name"] = .string(name) }
        // DPoP (RFC 9449 §5.2): offered when a provider of the resource takes DPoP-bound tokens, required when all of them require it.
        if servers.contains(where: { $0.dpop != .off }) {
            document["dpop_signing_alg_values_supported"] = .array(Self.dpopAlgorithms.map(JSONValue.string))
            if !servers.isEmpty && servers.allSatisfy({ $0.dpop == .required }) { document["dpop_bound_access_tokens_required"] = .bool(true) }
        }
        metadataJSON = JSONValue.object(document).compactJSON
    }

    /// The algorithms a DPoP proof may be signed with (every asymmetric one Gatehouse verifies).
    static let dpopAlgorithms = ["ES256", "ES384", "ES512", "PS256", "PS384", "PS512", "RS256", "RS384", "RS512", "EdDSA"]

    /// The absolute URL of the metadata document, which every 401 under the resource names.
    public var metadataURL: String { settings.metadataURL }

    /// Whether `host` (a Host header: any case, with or without port) is the url's host.
    func isHost(_ host: Substring) -> Bool {
        let name = RouteHosts.name(of: host)
        return name.utf8.count == hostName.utf8.count && zip(name.utf8, hostName.utf8).allSatisfy { ASCIIByte.lowercased($0) == $1 }
    }

    /// Whether the canonical `path` is the url's path or under it, segment-aware (`%2F` counts as a boundary, as for
    /// routes; `;` parameters are ignored).
    func contains(path: String) -> Bool {
        let base = settings.path
        guard !base.isEmpty else { return true }
        let routing = RouteTable.withoutPathParameters(path)
        guard routing.utf8.starts(with: base.utf8) else { return false }
        let rest = routing.utf8.dropFirst(base.utf8.count)
        guard let first = rest.first else { return true }
        return first == ASCIIByte.slash || rest.starts(with: "%2F".utf8)
    }

    /// With `mcp`: whether a request's `Origin` may reach the server (the url's own origin, or one allowed); compared
    /// ASCII case-insensitively, the default port being the same as none.
    public func allowsOrigin(_ origin: String) -> Bool {
        let lowered = RouteRule.asciiLowercased(origin)
        return origins.contains(lowered) || origins.contains(Self.withoutDefaultPort(lowered))
    }

    private static func withoutDefaultPort(_ origin: String) -> String {
        if origin.hasPrefix("https://") && origin.hasSuffix(":443") { return String(origin.dropLast(4)) }
        if origin.hasPrefix("http://") && origin.hasSuffix(":80") { return String(origin.dropLast(3)) }
        return origin
    }
}

/// The `[[resource]]` entries; hosts and paths do not overlap (checked at load), so at most one claims a request.
public struct ResourceTable: Sendable {
    public let resources: [ProtectedResource]

    public init(_ configuration: Configuration) {
        resources = configuration.resources.map {
            ProtectedResource($0, providers: configuration.providers, upstreamForwardsToken: configuration.upstream.forwardToken)
        }
    }

    public var isEmpty: Bool { resources.isEmpty }

    /// The resource a request belongs to: its host is the url's and its canonical path at or under the url's.
    public func resource(host: Substring?, path: String) -> ProtectedResource? {
        guard let host else { return nil }
        return resources.first { $0.isHost(host) && $0.contains(path: path) }
    }

    /// The resource whose metadata document is at `path` on `host`.
    public func metadata(host: Substring?, path: String) -> ProtectedResource? {
        guard let host, path.hasPrefix("/.well-known/oauth-protected-resource") else { return nil }
        return resources.first { $0.isHost(host) && $0.settings.metadataPath == path }
    }

    /// The audiences a provider's tokens may carry besides its own `audiences`: the urls of the resources it is an
    /// authorization server of (only requests under such a resource accept them: `Gatekeeper`).
    public static func resourceAudiences(of provider: ProviderSettings, in configuration: Configuration) -> [String] {
        let issuers = provider.declaredIssuers
        return configuration.resources.filter { $0.authorizationServers.contains(where: issuers.contains) }.map(\.url)
    }
}
