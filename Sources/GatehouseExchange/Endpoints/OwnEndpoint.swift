package import NIOHTTP1

/// Gatehouse's own endpoints on the client port, under `/.gatehouse/` (docs/reference.md §7).
/// They are answered by Gatehouse and never forwarded.
package enum OwnEndpoint: Equatable {
    /// The verified identity as JSON.
    case userinfo
    /// Revokes the presented token for as long as it could verify (`Revocation.retentionAfterExpiry`).
    case signout
    /// Revokes every token of the subject issued before now.
    case signoutEverywhere
    /// The decision endpoint for nginx `auth_request`, Traefik ForwardAuth, Envoy ext_authz.
    case check
    /// The identity assertion's keys (`[assertion]`): public, answered before any token is looked at.
    case jwks
    /// Where this provider POSTs its logout tokens (OpenID Connect Back-Channel Logout): no bearer token, the logout
    /// token in the body is the credential (docs/reference.md §7.3).
    case backchannelLogout(provider: String)

    package static let prefix = "/.gatehouse"
    static let backchannelLogoutPrefix = "/.gatehouse/backchannel-logout/"

    package init?(path: String) {
        switch path {
        case "/.gatehouse/userinfo": self = .userinfo
        case "/.gatehouse/signout": self = .signout
        case "/.gatehouse/signout-everywhere": self = .signoutEverywhere
        case "/.gatehouse/check": self = .check
        case "/.gatehouse/jwks.json": self = .jwks
        case _ where path.hasPrefix(Self.backchannelLogoutPrefix) && path.utf8.count > Self.backchannelLogoutPrefix.utf8.count:
            let name = path.dropFirst(Self.backchannelLogoutPrefix.count)
            guard !name.contains("/") else { return nil }
            self = .backchannelLogout(provider: String(name))
        default: return nil
        }
    }

    static func isOwn(_ path: String) -> Bool {
        path == prefix || path.hasPrefix(prefix + "/")
    }

    /// `check` takes any method: proxies send their subrequest with the original one or GET.
    package func allows(_ method: HTTPMethod) -> Bool {
        switch self {
        case .userinfo, .jwks: method == .GET || method == .HEAD
        case .signout, .signoutEverywhere, .backchannelLogout: method == .POST
        case .check: true
        }
    }

    var allowHeader: String {
        switch self {
        case .userinfo, .jwks: "GET, HEAD"
        case .signout, .signoutEverywhere, .backchannelLogout: "POST"
        case .check: "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"
        }
    }
}
