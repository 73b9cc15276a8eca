public import GatehouseSyntax
public import GatehouseConfig

/// The `[[route]]` entries in file order; the first that matches a request decides its rule.
///
/// Paths given to `match` are canonical (`PathNormalizer`). Configured prefixes and paths are put in the same
/// canonical form once, here, so that `/caf%c3%a9` in the file matches the request's `/caf%C3%A9`.
///
/// Matching is read the way common upstreams read the path, so that no spelling reaches a resource under a
/// different rule than its plain spelling would:
/// - `prefix` is segment-aware: `/health` matches `/health`, `/health/` and `/health/x`, not `/healthy`;
///   `%2F` after the prefix also counts as a boundary (`/admin%2Fx` is `/admin/x` to an upstream that
///   decodes before routing); a prefix ending in `/` matches paths starting with it; `/` matches everything.
/// - `path` is exact, but one trailing slash more or less is the same path (Express and others route
///   `/admin/` to `/admin`).
/// - `;` path parameters are ignored for matching (`/admin;jsessionid=1/users` is `/admin/users` to Tomcat
///   and Jetty); they are still forwarded.
/// - `methods`: empty means any; otherwise the method, case-sensitive, must be listed, and `HEAD` counts as
///   `GET` when `GET` is listed (upstreams serve HEAD with the GET handler).
public struct RouteTable: Sendable {
    private let entries: [Entry]
    /// Whether any route names `hosts`: only then is the request's host looked up.
    public let usesHosts: Bool

    /// Tables longer than this are searched through `RouteIndex`; shorter ones are scanned (as fast, and simpler).
    static let indexedFrom = 16
    private let index: RouteIndex?

    public init(_ routes: [RouteSettings], indexed: Bool? = nil) {
        entries = routes.enumerated().map { index, settings in
            Entry(matcher: Matcher(settings.match), hosts: RouteHosts(settings.hosts), context: settings.context.sorted { $0.key < $1.key },
                  methods: Set(settings.methods), message: MessageRequirement(settings), rule: RouteRule(settings, index: index))
        }
        usesHosts = routes.contains { !$0.hosts.isEmpty }
        index = indexed ?? (routes.count >= Self.indexedFrom)
            ? RouteIndex(paths: entries.map(\.matcher.filedPath), hosts: entries.map(\.hosts), contexts: entries.map(\.context)) : nil
    }

    /// The rule for a request; `RouteRule.defaultRule` (auth required, nothing more) when no route matches.
    ///
    /// - Parameter path: the canonical path from `PathNormalizer.normalize(_:)`.
    /// - Parameter host: the request's host (Host, `:authority`, a Check's authority, the decision endpoint's
    ///   `X-Forwarded-Host`), with or without port; nil matches only routes without `hosts`.
    /// - Parameter context: a gRPC Check's `context_extensions`; empty on the doors and for an HTTP Check, where
    ///   only routes without `context` match.
    /// - Parameter mcp: an MCP request's JSON-RPC message (docs/reference.md §17.3); nil: the request has none, and routes
    ///   with `mcp_methods` or `mcp_tools` do not match it.
    public func match(
        method: String, path: String, host: Substring? = nil, context: [String: String] = [:], mcp: MCPMessage? = nil
    ) -> RouteRule {
        let routingPath = Self.withoutPathParameters(path)
        func matches(_ entry: Entry) -> Bool {
            entry.accepts(method: method) && entry.matcher.matches(routingPath.utf8) && entry.accepts(host: host) && entry.accepts(context: context)
                && entry.message.accepts(mcp)
        }
        guard let index else {
            return entries.first(where: matches)?.rule ?? .defaultRule
        }
        // The first in file order of the candidates that match.
        var first = Int.max
        index.forEachCandidate(path: routingPath, host: host, context: context) { candidate in
            if candidate < first && matches(entries[candidate]) { first = candidate }
        }
        return first == Int.max ? .defaultRule : entries[first].rule
    }

    /// Whether the rule of a request whose message is not at hand (a Check without its body, the decision endpoint)
    /// could depend on it: the first route matching everything but the message has `mcp_methods` or `mcp_tools`. Such a
    /// request is refused rather than judged by a route after it.
    public func needsMessage(method: String, path: String, host: Substring? = nil, context: [String: String] = [:]) -> Bool {
        let routingPath = Self.withoutPathParameters(path)
        let first = entries.first {
            $0.accepts(method: method) && $0.matcher.matches(routingPath.utf8) && $0.accepts(host: host) && $0.accepts(context: context)
        }
        return first?.message.isEmpty == false
    }

    /// The path with every segment's `;` parameters cut off and the empty segments this leaves merged away.
    /// Returns the path itself, without allocating, when it has no `;`.
    static func withoutPathParameters(_ path: String) -> Substring {
        guard path.utf8.contains(ASCIIByte.semicolon) else { return path[...] }
        var result: [UInt8] = []
        result.reserveCapacity(path.utf8.count)
        let segments = path.utf8.split(separator: ASCIIByte.slash, omittingEmptySubsequences: false).dropFirst()
        for (offset, segment) in segments.enumerated() {
            let kept = segment.prefix { $0 != ASCIIByte.semicolon }
            let isLast = offset == segments.count - 1
            if kept.isEmpty && !isLast { continue }
            result.append(ASCIIByte.slash)
            result.append(contentsOf: kept)
        }
        if result.isEmpty { result.append(ASCIIByte.slash) }
        return String(decoding: result, as: UTF8.self)[...]
    }
}

extension RouteTable {
    /// A class: the index hands candidates by position, and reading one is a single retain, not a copy of each field.
    private final class Entry: Sendable {
        let matcher: Matcher
        /// nil: every host.
        let hosts: RouteHosts?
        /// Every pair must be in the Check's context; empty: any request.
        let context: [(key: String, value: String)]
        let methods: Set<String>
        let message: MessageRequirement
        let rule: RouteRule

        init(
            matcher: Matcher, hosts: RouteHosts?, context: [(key: String, value: String)], methods: Set<String>,
            message: MessageRequirement, rule: RouteRule
        ) {
            self.matcher = matcher
            self.hosts = hosts
            self.context = context
            self.methods = methods
            self.message = message
            self.rule = rule
        }

        func accepts(host: Substring?) -> Bool { hosts?.matches(host) ?? true }

        func accepts(context given: [String: String]) -> Bool {
            context.allSatisfy { given[$0.key] == $0.value }
        }

        func accepts(method: String) -> Bool {
            methods.isEmpty || methods.contains(method) || (method == "HEAD" && methods.contains("GET"))
        }
    }

    /// `mcp_methods` and `mcp_tools`: what the request's JSON-RPC message must be.
    struct MessageRequirement: Sendable {
        let methods: [GlobPattern]
        let tools: [GlobPattern]

        init(_ settings: RouteSettings) {
            methods = settings.mcpMethods.map(GlobPattern.init)
            tools = settings.mcpTools.map(GlobPattern.init)
        }

        var isEmpty: Bool { methods.isEmpty && tools.isEmpty }

        func accepts(_ message: MCPMessage?) -> Bool {
            guard !isEmpty else { return true }
            guard let message else { return false }
            if !methods.isEmpty && !methods.contains(where: { $0.matches(message.method) }) { return false }
            if !tools.isEmpty && !(message.method == "tools/call" && tools.contains { $0.matches(message.name) }) { return false }
            return true
        }
    }

    private enum Matcher: Sendable {
        case everything
        /// A segment-aware prefix, without trailing slash.
        case segmentPrefix(String)
        /// A prefix ending in `/`.
        case directoryPrefix(String)
        /// An exact path, without trailing slash (except the root).
        case exact(String)

        init(_ match: RouteSettings.Match) {
            switch match {
            case .prefix(let prefix):
                let canonical = Self.canonical(prefix)
                if canonical == "/" {
                    self = .everything
                } else if canonical.hasSuffix("/") {
                    self = .directoryPrefix(canonical)
                } else {
                    self = .segmentPrefix(canonical)
                }
            case .path(let path):
                self = .exact(Self.trimmingTrailingSlash(Self.canonical(path)))
            }
        }

        /// The configured path in the canonical form requests are matched in; a path that cannot be
        /// normalized is kept as written (configuration validation reports it) and matches nothing odd.
        private static func canonical(_ configured: String) -> String {
            guard let normalized = PathNormalizer.normalize(configured) else { return configured }
            return String(RouteTable.withoutPathParameters(normalized.path))
        }

        /// Where `RouteIndex` files the route: its canonical path (a prefix ending in `/` without it).
        var filedPath: String {
            switch self {
            case .everything: "/"
            case .segmentPrefix(let path), .directoryPrefix(let path), .exact(let path): path
            }
        }

        private static func trimmingTrailingSlash(_ path: String) -> String {
            path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
        }

        func matches(_ path: Substring.UTF8View) -> Bool {
            switch self {
            case .everything:
                return true
            case .segmentPrefix(let prefix):
                return Self.matchesSegmentPrefix(path, prefix.utf8)
            case .directoryPrefix(let prefix):
                // `/api/` also matches `/api%2Fx`: the same directory to an upstream that decodes `%2F`.
                return path.starts(with: prefix.utf8) || Self.matchesSegmentPrefix(path, prefix.utf8.dropLast(), exactAllowed: false)
            case .exact(let exact):
                guard path.starts(with: exact.utf8) else { return false }
                let rest = path.dropFirst(exact.utf8.count)
                return rest.isEmpty || (rest.count == 1 && rest.first == ASCIIByte.slash && exact != "/")
            }
        }

        private static func matchesSegmentPrefix(
            _ path: Substring.UTF8View,
            _ prefix: some Collection<UInt8>,
            exactAllowed: Bool = true
        ) -> Bool {
            guard path.starts(with: prefix) else { return false }
            let rest = path.dropFirst(prefix.count)
            guard let first = rest.first else { return exactAllowed }
            if first == ASCIIByte.slash { return true }
            return rest.starts(with: "%2F".utf8)
        }
    }
}
