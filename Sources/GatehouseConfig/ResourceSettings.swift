/// `[[resource]]`: an OAuth protected resource Gatehouse fronts (RFC 9728), an MCP server among them
/// (docs/reference.md §17). Requests whose host is the url's and whose path is the url's path or under it belong to it.
public struct ResourceSettings: Sendable, Equatable {
    /// The resource identifier exactly as written: what a token's `aud` must contain, what the metadata publishes.
    public var url: String
    /// `scheme://host[:port]` of `url`, lower case: its own browser origin.
    public var origin: String
    /// The url's host, lower case, without port or brackets' content changed.
    public var host: String
    /// The url's path without a trailing slash; empty for a url without path (every path of the host).
    public var path: String
    public var authorizationServers: [String]
    public var scopesSupported: [String]?
    public var name: String?
    public var mcp = false
    /// With `mcp`: browser origins allowed besides `origin` (`scheme://host[:port]`, lower case).
    public var allowedOrigins: [String] = []
    /// nil: `false` with `mcp`, else `[upstream] forward_token`.
    public var forwardToken: Bool?
    /// With `mcp`: the largest JSON-RPC POST body read for a decision.
    public var maxMessageBytes = ResourceSettings.defaultMaxMessageBytes
    public static let defaultMaxMessageBytes = 1 << 20
    /// With `mcp`: how long a session's binding is kept after its last use.
    public var sessionTTL: Duration = .seconds(86400)

    public init(url: String, origin: String, host: String, path: String, authorizationServers: [String]) {
        self.url = url
        self.origin = origin
        self.host = host
        self.path = path
        self.authorizationServers = authorizationServers
    }

    /// The RFC 9728 §3.1 metadata path: the well-known prefix, then the url's path.
    public var metadataPath: String { "/.well-known/oauth-protected-resource" + path }

    /// The absolute URL of the metadata document (what a 401's `resource_metadata` names).
    public var metadataURL: String { origin + metadataPath }

    /// Whether the token reaches the upstream under this resource, `[upstream] forward_token` being `upstreamDefault`.
    public func forwardsToken(upstreamDefault: Bool) -> Bool { forwardToken ?? (mcp ? false : upstreamDefault) }

    /// Whether two resources could claim one request: the same host and one path at or under the other.
    public func overlaps(_ other: ResourceSettings) -> Bool {
        guard host == other.host else { return false }
        let (short, long) = path.utf8.count <= other.path.utf8.count ? (path, other.path) : (other.path, path)
        return long == short || long.hasPrefix(short + "/")
    }
}
