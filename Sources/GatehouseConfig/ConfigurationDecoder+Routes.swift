import GatehouseRules

// [[route]]: which paths need which tokens, first match wins.
extension ConfigurationDecoder {
    /// Requirements that only apply to a checked token, so on a `public` route they could never apply.
    static let tokenRequirementKeys = [
        "providers", "scopes", "groups", "roles", "service_accounts", "email_domains", "require_email_verified", "dpop", "when",
    ]

    /// nil if the route is unusable (its problems are in the sink).
    static func routeSettings(
        _ table: TOMLReader, providerNames: [String], maxHeaderBytes: Int, maxMessageBytes: Int = 1 << 20
    ) -> RouteSettings? {
        let issuesBefore = table.sink.issues.count
        let match = routeMatch(table)
        var route = RouteSettings(match: match ?? .prefix("/"))
        route.methods = methods(table) ?? []
        route.hosts = hosts(table) ?? []
        route.context = context(table) ?? [:]
        route.mcpMethods = messagePatterns(table, "mcp_methods")
        route.mcpTools = messagePatterns(table, "mcp_tools")
        route.auth = table.choice("auth", among: [RouteSettings.Auth.public, .optional, .required]) ?? route.auth
        if route.auth == .public {
            for key in tokenRequirementKeys where table.contains(key) {
                table.report(key, "has no effect on a public route (no token is checked there); remove it or use auth = \"optional\" or \"required\"")
            }
        } else {
            route.providers = routeProviders(table, configured: providerNames) ?? []
            route.scopes = table.strings("scopes") ?? []
            route.groups = table.strings("groups") ?? []
            route.roles = table.strings("roles") ?? []
            route.serviceAccounts = table.strings("service_accounts") ?? []
            for account in route.serviceAccounts {
                let parts = account.split(separator: "/", omittingEmptySubsequences: false)
                if parts.count != 2 || parts.contains(where: \.isEmpty) || parts[0] == "*" {
                    table.report("service_accounts", "\(ConfigKeyPath.quoted(account)) is not namespace/name or namespace/*")
                }
            }
            route.emailDomains = domains(table, "email_domains") ?? []
            route.requireEmailVerified = table.bool("require_email_verified") ?? route.requireEmailVerified
            route.dpop = table.choice("dpop", among: DPoPMode.all)
            if let source = table.string("when") {
                do {
                    route.when = try RuleExpression(rule: source, maxHeaderBytes: maxHeaderBytes, maxMessageBytes: maxMessageBytes)
                } catch {
                    table.report("when", error.message)
                }
            }
        }
        table.finish()
        return match != nil && table.sink.issues.count == issuesBefore ? route : nil
    }

    private static func routeMatch(_ table: TOMLReader) -> RouteSettings.Match? {
        let prefix = table.string("prefix")
        let path = table.string("path")
        switch (table.contains("prefix"), table.contains("path")) {
        case (true, true):
            table.report(nil, "give exactly one of prefix or path, not both")
            return nil
        case (false, false):
            table.report(nil, "needs prefix or path")
            return nil
        default:
            break
        }
        let key = prefix != nil ? "prefix" : "path"
        guard let text = prefix ?? path else { return nil }
        if let problem = ConfigSyntax.routePathProblem(text) {
            table.report(key, "\(ConfigKeyPath.quoted(text)) \(problem)")
            return nil
        }
        return prefix != nil ? .prefix(text) : .path(text)
    }

    private static func methods(_ table: TOMLReader) -> [String]? {
        guard let methods = table.strings("methods") else { return nil }
        if methods.isEmpty { table.report("methods", "must list at least one method (omit the key for any method)") }
        var result: [String] = []
        for method in methods {
            guard ConfigSyntax.isToken(method) else {
                table.report("methods", "\(ConfigKeyPath.quoted(method)) is not a valid method name")
                continue
            }
            let upper = method.uppercased()
            if !result.contains(upper) { result.append(upper) }
        }
        return result
    }

    /// Host names (`orders.example.com`), a leading `*.` for any name under one (`*.shop.example.com`), or an IP
    /// literal (`10.0.0.5`, `[::1]`); never a port (a request's port is not compared) nor a `*` elsewhere.
    private static func hosts(_ table: TOMLReader) -> [String]? {
        guard let hosts = table.strings("hosts") else { return nil }
        if hosts.isEmpty { table.report("hosts", "must list at least one host (omit the key for every host)") }
        var result: [String] = []
        for host in hosts {
            let name = host.hasPrefix("*.") ? String(host.dropFirst(2)) : host
            let bracketed = name.hasPrefix("[") && name.hasSuffix("]") && name.count > 2
                && name.dropFirst().dropLast().allSatisfy { $0.isHexDigit || $0 == ":" || $0 == "." }
            guard bracketed && !host.hasPrefix("*.") || (ConfigSyntax.isHostName(name) && !name.hasPrefix(".") && !name.contains("..")) else {
                let why = name.contains(":") && !name.hasPrefix("[") ? "without a port (the request's port is not compared)" : "a host name, `*.` and a name, or an IP"
                table.report("hosts", "\(ConfigKeyPath.quoted(host)) is not \(why)")
                continue
            }
            let canonical = RouteHosts.canonical(host)
            if !result.contains(canonical) { result.append(canonical) }
        }
        return result
    }

    /// `context = { service = "billing" }`: names and values Envoy sets per route or virtual host
    /// (`ExtAuthzPerRoute.check_settings.context_extensions`), each a non-empty string.
    private static func context(_ table: TOMLReader) -> [String: String]? {
        guard let context = table.table("context") else { return nil }
        var pairs: [String: String] = [:]
        for key in context.keys {
            guard let text = context.string(key) else { continue }
            if key.isEmpty || text.isEmpty {
                context.report(key, "names and values of a context must not be empty")
                continue
            }
            pairs[key] = text
        }
        if context.keys.isEmpty { table.report("context", "must name at least one pair (omit the key for any request)") }
        context.finish()
        return pairs
    }

    /// `mcp_methods`, `mcp_tools`: patterns where `*` is any run of characters; at least one when the key is given.
    private static func messagePatterns(_ table: TOMLReader, _ key: String) -> [String] {
        guard let patterns = table.strings(key) else { return [] }
        if patterns.isEmpty { table.report(key, "must list at least one pattern (omit the key for any message)") }
        return patterns
    }

    private static func routeProviders(_ table: TOMLReader, configured: [String]) -> [String]? {
        guard let names = table.strings("providers") else { return nil }
        if names.isEmpty { table.report("providers", "must name at least one provider (omit the key for any provider)") }
        let configuredList = configured.isEmpty ? "none" : configured.joined(separator: ", ")
        for name in names where !configured.contains(name) {
            table.report("providers", "unknown provider \(ConfigKeyPath.quoted(name)) (configured: \(configuredList))")
        }
        return names
    }

    /// Domain names as in an email address or Google's `hd` claim: `example.com`, without `@`.
    static func domains(_ table: TOMLReader, _ key: String) -> [String]? {
        guard let domains = table.strings(key) else { return nil }
        for domain in domains where !ConfigSyntax.isHostName(domain) {
            table.report(key, "\(ConfigKeyPath.quoted(domain)) is not a domain (write example.com, without @)")
        }
        return domains
    }
}
