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

    package static let prefix = "/.gatehouse"

    package init?(path: String) {
        switch path {
        case "/.gatehouse/userinfo": self = .userinfo
        case "/.gatehouse/signout": self = .signout
        case "/.gatehouse/signout-everywhere": self = .signoutEverywhere
        case "/.gatehouse/check": self = .check
        case "/.gatehouse/jwks.json": self = .jwks
        default: return nil
        }
    }

    package static func isOwn(_ path: String) -> Bool {
        path == prefix || path.hasPrefix(prefix + "/")
    }

    /// `check` takes any method: proxies send their subrequest with the original one or GET.
    package func allows(_ method: HTTPMethod) -> Bool {
        switch self {
        case .userinfo, .jwks: method == .GET || method == .HEAD
        case .signout, .signoutEverywhere: method == .POST
        case .check: true
        }
    }

    package var allowHeader: String {
        switch self {
        case .userinfo, .jwks: "GET, HEAD"
        case .signout, .signoutEverywhere: "POST"
        case .check: "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"
        }
    }
}
