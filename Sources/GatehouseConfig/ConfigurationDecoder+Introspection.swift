import Foundation

// [[provider]] type = "introspection": opaque tokens judged by the issuer (RFC 7662).
extension ConfigurationDecoder {
    static func decodeIntrospection(_ table: TOMLReader, into provider: inout ProviderSettings) {
        var settings = IntrospectionSettings()
        settings.endpoint = table.parsed("introspection_endpoint", ConfigSyntax.httpURL)
        if !table.contains("introspection_endpoint") && !table.contains("issuer") {
            table.report(nil, "needs introspection_endpoint, or issuer (its endpoint is then read from the issuer's metadata)")
        }
        if table.contains("issuer"), table.parsed("issuer", ConfigSyntax.baseURL) == nil, !table.contains("introspection_endpoint") {
            table.report("issuer", "must be an http(s) URL to discover the introspection endpoint from (or give introspection_endpoint)")
        }
        settings.clientID = table.nonEmptyString("client_id") ?? ""
        settings.clientSecret = secretSetting(table, "client_secret")
        settings.clientAuth = table.choice("client_auth", among: [IntrospectionSettings.ClientAuth.basic, .post]) ?? settings.clientAuth
        settings.cacheTTL = positiveDuration(table, "cache_ttl") ?? settings.cacheTTL
        settings.negativeCacheTTL = positiveDuration(table, "negative_cache_ttl") ?? settings.negativeCacheTTL
        settings.cacheMaxEntries = table.integer("cache_max_entries", in: 100...10_000_000) ?? settings.cacheMaxEntries
        settings.maxInFlight = table.integer("max_in_flight", in: 1...10_000) ?? settings.maxInFlight
        settings.maxCallsPerSecond = table.integer("max_calls_per_second", in: 1...1_000_000) ?? settings.maxCallsPerSecond
        if let prefix = table.nonEmptyString("token_prefix") {
            if prefix.allSatisfy({ $0.isASCII && !$0.isWhitespace }) {
                settings.tokenPrefix = prefix
            } else {
                table.report("token_prefix", "\(ConfigKeyPath.quoted(prefix)) must be visible ASCII")
            }
        }
        for key in ["jwks_uri", "algorithms"] where table.contains(key) {
            table.report(key, "has no effect for type \"introspection\" (opaque tokens have no keys)")
        }
        provider.introspection = settings
    }

    /// A token is never sprayed across identity providers: where a route (or the default rule) allows
    /// several introspection providers, each must have a `token_prefix`, and no prefix may start another.
    static func checkIntrospectionRouting(_ providers: [ProviderSettings], routes: [RouteSettings], sink: ConfigIssueSink) {
        let introspecting = providers.filter { $0.type == .introspection }
        guard introspecting.count > 1 else { return }
        func check(_ allowed: [ProviderSettings], at keyPath: String) {
            guard allowed.count > 1 else { return }
            if let unprefixed = allowed.first(where: { $0.introspection.tokenPrefix == nil }) {
                sink.add(ConfigurationIssue(keyPath: keyPath, message: "allows introspection providers \(allowed.map(\.name).joined(separator: ", ")): "
                    + "each needs a token_prefix (\(unprefixed.name) has none), or the route must name one provider"))
                return
            }
            for first in allowed {
                for second in allowed where first.name != second.name {
                    if let a = first.introspection.tokenPrefix, let b = second.introspection.tokenPrefix, b.hasPrefix(a) {
                        sink.add(ConfigurationIssue(keyPath: keyPath, message: "token_prefix \(ConfigKeyPath.quoted(a)) of \(first.name) "
                            + "also matches \(second.name)'s \(ConfigKeyPath.quoted(b)): a token could go to either"))
                        return
                    }
                }
            }
        }
        check(introspecting, at: "provider")
        for (index, route) in routes.enumerated() where route.auth != .public && !route.providers.isEmpty {
            check(introspecting.filter { route.providers.contains($0.name) }, at: "route[\(index)].providers")
        }
    }
}
