/// Which routes a request could match, found without trying every route: routes are filed by host (every host, an
/// exact name, a wildcard's suffix), then in a tree of path segments. The index only narrows: `RouteTable` still
/// tries each candidate's full rule, in file order, so the first match in the file wins as before.
///
/// A route is filed at the node of its configured path's segments, and a request collects the routes of every
/// node along its own path: a prefix or an exact path can only match a request whose path begins with its
/// segments. Segments are split at `/` and at `%2F` alike (a prefix matches at an encoded slash too), the same way
/// for routes and requests, so splitting more never hides a match.
struct RouteIndex: Sendable {
    private let anyHost: PathTree
    /// Lower-case names without a trailing dot.
    private let exactHosts: [Substring: PathTree]
    /// `*.shop.example.com` under `.shop.example.com`.
    private let wildcardHosts: [Substring: PathTree]

    /// `paths[i]`: route i's configured path in canonical form, without `;` parameters; `hosts[i]`: its hosts.
    init(paths: [String], hosts: [RouteHosts?]) {
        var anyHost = PathTree()
        var exactHosts: [Substring: PathTree] = [:]
        var wildcardHosts: [Substring: PathTree] = [:]
        for (route, path) in paths.enumerated() {
            guard let routeHosts = hosts[route] else {
                anyHost.file(route, at: path)
                continue
            }
            for name in routeHosts.exact { exactHosts[name[...], default: PathTree()].file(route, at: path) }
            for suffix in routeHosts.suffixes { wildcardHosts[suffix[...], default: PathTree()].file(route, at: path) }
        }
        self.anyHost = anyHost
        self.exactHosts = exactHosts
        self.wildcardHosts = wildcardHosts
    }

    /// Calls `visit` with every route that could match, in no particular order (a route may come more than once).
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
