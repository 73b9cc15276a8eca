import GatehouseSyntax

/// `[[route]] hosts` (docs/reference.md §3.11): the request hosts a route applies to. A request's host (Host on
/// HTTP/1.1, `:authority` on HTTP/2, a Check's authority, the decision endpoint's `X-Forwarded-Host`) is compared
/// without its port and one trailing dot, ASCII case-insensitively. `*.shop.example.com` matches any name ending in
/// `.shop.example.com` (one label or more), never `shop.example.com` itself.
package struct RouteHosts: Sendable {
    /// Exact names and wildcard suffixes (`.shop.example.com`), lower case, without a trailing dot.
    package let exact: [String]
    package let suffixes: [String]

    /// nil for an empty list (every host).
    package init?(_ patterns: [String]) {
        guard !patterns.isEmpty else { return nil }
        var exact: [String] = []
        var suffixes: [String] = []
        for pattern in patterns.map(Self.canonical) {
            if pattern.hasPrefix("*.") { suffixes.append(String(pattern.dropFirst())) } else { exact.append(pattern) }
        }
        self.exact = exact
        self.suffixes = suffixes
    }

    /// Lower case, one trailing dot dropped: how patterns are kept and compared.
    package static func canonical(_ name: String) -> String {
        let lowered = name.lowercased()
        return lowered.hasSuffix(".") ? String(lowered.dropLast()) : lowered
    }

    package func matches(_ host: Substring?) -> Bool {
        guard let host else { return false }
        let name = Self.name(of: host)
        if exact.contains(where: { Self.equalsIgnoringCase(name.utf8, $0.utf8) }) { return true }
        return suffixes.contains { suffix in
            name.utf8.count > suffix.utf8.count && Self.equalsIgnoringCase(name.utf8.suffix(suffix.utf8.count), suffix.utf8)
        }
    }

    /// The host without its port and one trailing dot: `Example.com.:8443` → `Example.com`, `[::1]:80` → `[::1]`.
    package static func name(of host: Substring) -> Substring {
        var name = host
        if name.hasPrefix("[") {
            if let close = name.firstIndex(of: "]") { name = name[...close] }
        } else if let colon = name.lastIndex(of: ":") {
            name = name[..<colon]
        }
        if name.hasSuffix(".") { name = name.dropLast() }
        return name
    }

    private static func equalsIgnoringCase(_ candidate: some Collection<UInt8>, _ lowercase: some Collection<UInt8>) -> Bool {
        candidate.count == lowercase.count && zip(candidate, lowercase).allSatisfy { ASCIIByte.lowercased($0) == $1 }
    }
}
