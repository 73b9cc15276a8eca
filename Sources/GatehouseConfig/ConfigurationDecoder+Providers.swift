import TOMLKit

// [[provider]]: one identity provider per table, its keys depending on its type.
extension ConfigurationDecoder {
    /// The keys meaningful only for some types. Every type also takes name, type, issuer, jwks_uri, algorithms,
    /// revocation_endpoint, dpop and headers (presets' issuer and jwks_uri can be overridden for emulators and tests).
    static let providerKeys: [ProviderType: [String]] = [
        .google: ["audiences", "hosted_domains"],
        .apple: ["audiences"],
        .firebase: ["project_id"],
        .cognito: ["region", "user_pool_id", "client_ids", "token_use", "userinfo", "domain", "userinfo_uri"],
        .oidc: ["audiences", "token_typ"] + backchannelLogoutKeys,
        .jwks: ["audiences", "token_typ"] + backchannelLogoutKeys,
        .entra: ["audiences", "tenants", "accept_v1"],
        .kubernetes: ["audiences", "api_server", "ca_file", "token_file", "token_review"],
        .introspection: [
            "audiences", "introspection_endpoint", "client_id", "client_secret", "client_secret_file", "client_auth", "cache_ttl",
            "negative_cache_ttl", "cache_max_entries", "max_in_flight", "max_calls_per_second", "token_prefix",
        ],
    ]

    /// The keys each type cannot do without (everything else has a preset or a default).
    static let requiredProviderKeys: [ProviderType: [String]] = [
        .google: ["audiences"],
        .apple: ["audiences"],
        .firebase: ["project_id"],
        .cognito: ["region", "user_pool_id", "client_ids"],
        .oidc: ["issuer", "audiences"],
        .jwks: ["issuer", "jwks_uri", "audiences"],
        .introspection: ["client_id"],
        .entra: ["audiences", "tenants"],
        .kubernetes: ["audiences"],
    ]

    /// All providers, or nil if any of them is unusable (its problems are in the sink).
    static func providerSettings(_ tables: [TOMLReader], maxHeaderBytes: Int) -> [ProviderSettings]? {
        var providers: [ProviderSettings] = []
        var firstIndexByName: [String: Int] = [:]
        var allUsable = true
        for (index, table) in tables.enumerated() {
            if let provider = providerSettings(table, maxHeaderBytes: maxHeaderBytes) { providers.append(provider) } else { allUsable = false }
            // Compared as written, so a duplicate is reported even when either provider has other problems.
            guard let name = table.value("name")?.string, !name.isEmpty else { continue }
            if let earlier = firstIndexByName[name] {
                table.report("name", "duplicate provider name \(ConfigKeyPath.quoted(name)) (also provider[\(earlier)])")
                allUsable = false
            } else {
                firstIndexByName[name] = index
            }
        }
        return allUsable && !providers.isEmpty ? providers : nil
    }

    static func providerSettings(_ table: TOMLReader, maxHeaderBytes: Int) -> ProviderSettings? {
        let issuesBefore = table.sink.issues.count
        let name = providerName(table)
        let type = table.choice("type", among: ProviderType.allCases)
        if !table.contains("type") { table.sink.add(.required(table.keyPath("type"))) }
        var provider = ProviderSettings(name: name ?? "", type: type ?? .jwks)
        rejectKeysNotMeaningful(for: type, in: table)
        // A key not meaningful for the type has been reported; reading it too would only add noise.
        let applies = { (key: String) in type.map { providerKeys[$0]?.contains(key) == true } ?? true }

        provider.issuer = type == .oidc ? table.parsed("issuer", ConfigSyntax.oidcIssuer) : table.nonEmptyString("issuer")
        provider.jwksURI = table.parsed("jwks_uri", ConfigSyntax.httpURL)
        provider.algorithms = algorithms(table)
        provider.revocationEndpoint = table.parsed("revocation_endpoint", ConfigSyntax.httpURL)
        provider.dpop = table.choice("dpop", among: DPoPMode.all) ?? provider.dpop
        if let headers = table.table("headers") {
            provider.headers = headerMappings(headers, allowsForwardClaimsJSON: false, maxHeaderBytes: maxHeaderBytes)
            headers.finish()
        }
        if applies("audiences") { provider.audiences = nonEmptyList(table, "audiences") ?? [] }
        if applies("token_typ") { provider.tokenTypes = tokenTypes(table) }
        if applies("backchannel_logout") { provider.backchannelLogout = backchannelLogout(table) }
        if applies("hosted_domains") { provider.hostedDomains = domains(table, "hosted_domains") ?? [] }
        if applies("project_id") { provider.projectID = table.parsed("project_id", projectID) }
        if type == .cognito || type == nil { decodeCognito(table, into: &provider) }
        if type == .introspection { decodeIntrospection(table, into: &provider) }
        if type == .entra { decodeEntra(table, into: &provider) }
        if type == .kubernetes {
            provider.apiServer = table.parsed("api_server", ConfigSyntax.baseURL)
            provider.caFile = table.nonEmptyString("ca_file")
            provider.tokenFile = table.nonEmptyString("token_file")
            provider.tokenReview = table.bool("token_review") ?? provider.tokenReview
        }
        for key in type.flatMap({ requiredProviderKeys[$0] }) ?? [] where !table.contains(key) {
            table.sink.add(.required(table.keyPath(key), because: "for type \(ConfigKeyPath.quoted(type?.rawValue ?? ""))"))
        }
        table.finish()
        guard let name, type != nil, table.sink.issues.count == issuesBefore else { return nil }
        provider.name = name
        return provider
    }

    private static func providerName(_ table: TOMLReader) -> String? {
        guard table.contains("name") else {
            table.sink.add(.required(table.keyPath("name")))
            return nil
        }
        guard let name = table.nonEmptyString("name") else { return nil }
        guard name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else {
            table.report("name", "\(ConfigKeyPath.quoted(name)) may contain only letters, digits, - and _ (it appears in headers, logs and metrics)")
            return nil
        }
        return name
    }

    /// Reports the keys of other types: `project_id` on a google provider is a mistake, not a no-op.
    private static func rejectKeysNotMeaningful(for type: ProviderType?, in table: TOMLReader) {
        guard let type, let own = providerKeys[type] else { return }
        var typeSpecificKeys: [String] = []
        for key in ProviderType.allCases.flatMap({ providerKeys[$0] ?? [] }) where !typeSpecificKeys.contains(key) {
            typeSpecificKeys.append(key)
        }
        for key in typeSpecificKeys where !own.contains(key) && table.contains(key) {
            let users = ProviderType.allCases.filter { providerKeys[$0]?.contains(key) == true }.map(\.rawValue)
            table.report(key, "not used by type \(ConfigKeyPath.quoted(type.rawValue)) (only by \(users.joined(separator: ", ")))")
        }
    }

    private static func decodeCognito(_ table: TOMLReader, into provider: inout ProviderSettings) {
        provider.region = table.parsed("region", awsRegion)
        provider.userPoolID = table.nonEmptyString("user_pool_id")
        if let pool = provider.userPoolID, let region = provider.region, !pool.hasPrefix("\(region)_") {
            table.report("user_pool_id", "\(ConfigKeyPath.quoted(pool)) is not a pool of region \(region) (expected \(region)_...)")
        } else if let pool = provider.userPoolID, !pool.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) {
            table.report("user_pool_id", "\(ConfigKeyPath.quoted(pool)) is not a user pool id (region_id, e.g. eu-west-1_AbCdEf123)")
        }
        provider.clientIDs = nonEmptyList(table, "client_ids") ?? []
        let tokenUses: [ProviderSettings.TokenUse] = [.access, .id, .any]
        provider.tokenUse = table.choice("token_use", among: tokenUses) ?? provider.tokenUse
        provider.userinfo = table.bool("userinfo") ?? provider.userinfo
        provider.domain = table.parsed("domain", ConfigSyntax.baseURL)
        provider.userinfoURI = table.parsed("userinfo_uri", ConfigSyntax.baseURL)
        if provider.userinfo, !table.contains("domain"), !table.contains("userinfo_uri") {
            table.sink.add(.required(table.keyPath("domain"), because: "when userinfo = true without userinfo_uri (the pool's /oauth2/userInfo lives there)"))
        }
    }

    /// A list that must not be empty: `audiences = []` would accept no token at all.
    private static func nonEmptyList(_ table: TOMLReader, _ key: String) -> [String]? {
        guard let list = table.strings(key) else { return nil }
        if list.isEmpty { table.report(key, "must list at least one value") }
        return list
    }

    /// Part of the Firebase issuer URL, so no `/`, `?` or spaces.
    private static func projectID(_ text: String) -> Result<String, InvalidConfigValue> {
        let valid = !text.isEmpty && text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "-_.:".contains($0)) }
        return valid ? .success(text) : .failure(InvalidConfigValue("\(ConfigKeyPath.quoted(text)) is not a Firebase project id"))
    }

    /// Part of the Cognito issuer host name, e.g. `eu-west-1`.
    private static func awsRegion(_ text: String) -> Result<String, InvalidConfigValue> {
        let valid = !text.isEmpty && text.allSatisfy { $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "-") }
        return valid ? .success(text) : .failure(InvalidConfigValue("\(ConfigKeyPath.quoted(text)) is not an AWS region (e.g. eu-west-1)"))
    }

    /// `token_typ = ["at+jwt"]`: media type names (RFC 6838 characters), written without `application/`.
    private static func tokenTypes(_ table: TOMLReader) -> [String]? {
        guard let types = table.strings("token_typ") else { return nil }
        if types.isEmpty { table.report("token_typ", "must list at least one type (omit the key for any typ)") }
        for type in types {
            let lowered = type.lowercased()
            let valid = !lowered.isEmpty && !lowered.hasPrefix("application/")
                && lowered.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "!#$&-^_.+".contains($0)) }
            if !valid {
                table.report("token_typ", "\(ConfigKeyPath.quoted(type)) is not a media type name such as \"at+jwt\" (without application/)")
            }
        }
        return types.map { $0.lowercased() }
    }

    /// `tenants`: tenant ids (GUIDs), or `["*"]` alone for a multi-tenant SaaS app; an `issuer` override must
    /// keep `{tenantid}` (the token's own `tid` is put there).
    private static func decodeEntra(_ table: TOMLReader, into provider: inout ProviderSettings) {
        if let tenants = table.strings("tenants") {
            if tenants.isEmpty { table.report("tenants", "must list at least one tenant id, or [\"*\"] for any tenant") }
            if tenants.contains("*"), tenants.count > 1 { table.report("tenants", "\"*\" stands alone (it allows every tenant)") }
            for tenant in tenants where tenant != "*" && !EntraPreset.isTenantID(tenant) {
                table.report("tenants", "\(ConfigKeyPath.quoted(tenant)) is not a tenant id (a GUID such as 72f988bf-86f1-41af-91ab-2d7cd011db47)")
            }
            provider.tenants = tenants.map { $0.lowercased() }
        }
        provider.acceptV1 = table.bool("accept_v1") ?? provider.acceptV1
        if let issuer = table.value("issuer")?.string, EntraPreset.Template(issuer) == nil {
            table.report("issuer", "must contain {tenantid}, where the token's own tid goes")
        }
    }
}

