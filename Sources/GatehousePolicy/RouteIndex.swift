import GatehouseSyntax
import GatehouseConfig

/// Which routes a request could match, found without trying every route: routes are filed by Envoy context (none,
/// or one of their pairs), then by host (every host, an exact name, a wildcard's suffix), then in a tree of path
/// segments. The index only narrows: `RouteTable` still tries each candidate's full rule, in file order, so the
/// first match in the file wins as before.
///
/// A route with `context` is filed under its first pair (in key order) and found only through a request's pairs, so
/// the many context routes of an authorizer for many services cost a door's request nothing. A route is filed at
/// the node of its configured path's segments, and a request collects the routes of every node along its own path:
/// a prefix or an exact path can only match a request whose path begins with its segments. Segments are split at
/// `/` and at `%2F` alike (a prefix matches at an encoded slash too), the same way for routes and requests, so
/// splitting more never hides a match. A class: a table is consulted on every request, and one reference is one
/// retain where a struct of dictionaries would be a copy of each.
final class RouteIndex: Sendable {
    private let withoutContext: HostIndex
    /// Under `key=value` of the route's first pair.
    private let byContext: [String: HostIndex]

    /// `paths[i]`: route i's configured path in canonical form, without `;` parameters; `hosts[i]`: its hosts;
    /// `contexts[i]`: its context pairs in key order.
    init(paths: [String], hosts: [RouteHosts?], contexts: [[(key: String, value: String)]]) {
        var withoutContext = HostIndex()
        var byContext: [String: HostIndex] = [:]
        for (route, path) in paths.enumerated() {
            if let pair = contexts[route].first {
                byContext[Self.contextKey(pair.key, pair.value), default: HostIndex()].file(route, at: path, hosts: hosts[route])
            } else {
                withoutContext.file(route, at: path, hosts: hosts[route])
            }
        }
        self.withoutContext = withoutContext
        self.byContext = byContext
    }

    private static func contextKey(_ key: String, _ value: String) -> String { key + "\u{0}" + value }

    /// Calls `visit` with every route that could match, in no particular order (a route may come more than once).
    func forEachCandidate(path: Substring, host: Substring?, context: [String: String], _ visit: (Int) -> Void) {
        withoutContext.forEachCandidate(path: path, host: host, visit)
        guard !byContext.isEmpty else { return }
        for (key, value) in context {
            byContext[Self.contextKey(key, value)]?.forEachCandidate(path: path, host: host, visit)
        }
    }
}

/// Routes filed by host, then by path.
private struct HostIndex: Sendable {
    private var anyHost = PathTree()
    /// Lower-case names without a trailing dot.
    private var exactHosts: [Substring: PathTree] = [:]
    /// `*.shop.example.com` under `.shop.example.com`.
    private var wildcardHosts: [Substring: PathTree] = [:]

    mutating func file(_ route: Int, at path: String, hosts: RouteHosts?) {
        guard let hosts else {
            anyHost.file(route, at: path)
            return
        }
        for name in hosts.exact { exactHosts[name[...], default: PathTree()].file(route, at: path) }
        for suffix in hosts.suffixes { wildcardHosts[suffix[...], default: PathTree()].file(route, at: path) }
    }

    func forEachCandidate(path: Substring, host: Substring?, _ visit: (Int) -> Void) {
        anyHost.forEachRoute(along: path, visit)
        guard let host, !exactHosts.isEmpty || !wildcardHosts.isEmpty else { return }
        let given = RouteHosts.name(of: host)
        let name = given.utf8.contains(where: { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }) ? given.lowercased()[...] : given
        exactHosts[name]?.forEachRoute(along: path, visit)
        guard !wildcardHosts.isEmpty else { return }
        var position = name.startIndex
        while let dot = name[position...].firstIndex(of: ".") {
            if dot > name.startIndex { wildcardHosts[name[dot...]]?.forEachRoute(along: path, visit) }
            position = name.index(after: dot)
        }
    }
}

/// Routes filed by the segments of their paths.
private struct PathTree: Sendable {
    private struct Node: Sendable {
        var routes: [Int] = []
        var children: [Substring: Int] = [:]
    }

    private var nodes = [Node()]

    mutating func file(_ route: Int, at path: String) {
        var node = 0
        Self.forEachSegment(of: path[...]) { segment in
            if let child = nodes[node].children[segment] {
                node = child
            } else {
                nodes.append(Node())
                nodes[node].children[segment] = nodes.count - 1
                node = nodes.count - 1
            }
            return true
        }
        nodes[node].routes.append(route)
    }

    func forEachRoute(along path: Substring, _ visit: (Int) -> Void) {
        var node = 0
        for route in nodes[0].routes { visit(route) }
        Self.forEachSegment(of: path) { segment in
            guard let child = nodes[node].children[segment] else { return false }
            node = child
            for route in nodes[node].routes { visit(route) }
            return true
        }
    }

    /// The path's segments after its leading `/`, split at `/` and `%2F`, until `body` returns false; an empty last
    /// segment is none (a route's `/api/` is filed under `api`, and a request for `/api/` walks to `api`).
    private static func forEachSegment(of path: Substring, _ body: (Substring) -> Bool) {
        let bytes = path.utf8
        var start = bytes.startIndex
        if start < bytes.endIndex, bytes[start] == ASCIIByte.slash { start = bytes.index(after: start) }
        var index = start
        while index < bytes.endIndex {
            let byte = bytes[index]
            let separatorLength: Int
            if byte == ASCIIByte.slash {
                separatorLength = 1
            } else if byte == UInt8(ascii: "%"), bytes[index...].starts(with: "%2F".utf8) || bytes[index...].starts(with: "%2f".utf8) {
                separatorLength = 3
            } else {
                index = bytes.index(after: index)
                continue
            }
            guard body(Substring(bytes[start..<index])) else { return }
            index = bytes.index(index, offsetBy: separatorLength)
            start = index
        }
        if start < bytes.endIndex { _ = body(Substring(bytes[start..<bytes.endIndex])) }
    }
}
