import Foundation

// [listen], [admin], [upstream], [verification], [jwks]: where Gatehouse listens, where it forwards, how it verifies.
extension ConfigurationDecoder {
    static func listenSettings(_ table: TOMLReader) -> ListenSettings {
        var settings = ListenSettings()
        settings.address = table.parsed("address", ConfigSyntax.socketAddress) ?? settings.address
        settings.tlsCertificatePath = table.nonEmptyString("tls_cert")
        settings.tlsKeyPath = table.nonEmptyString("tls_key")
        // Checked on presence, not on validity, so an empty tls_key is reported once, as empty.
        switch (table.contains("tls_cert"), table.contains("tls_key")) {
        case (true, false): table.report("tls_key", "required when tls_cert is set (give both or neither)")
        case (false, true): table.report("tls_cert", "required when tls_key is set (give both or neither)")
        default: break
        }
        settings.drainTimeout = table.duration("drain_timeout") ?? settings.drainTimeout
        settings.idleTimeout = positiveDuration(table, "idle_timeout") ?? settings.idleTimeout
        settings.maxHeaderBytes = table.integer("max_header_bytes", in: 1024...1_048_576) ?? settings.maxHeaderBytes
        settings.tokenMaxBytes = table.integer("token_max_bytes", in: 256...1_048_576) ?? settings.tokenMaxBytes
        settings.http2 = table.bool("http2") ?? settings.http2
        clientCertificates(table, into: &settings)
        table.finish()
        return settings
    }

    /// Client certificates for certificate-bound tokens (RFC 8705): on the TLS listener, or from a trusted proxy's header.
    private static func clientCertificates(_ table: TOMLReader, into settings: inout ListenSettings) {
        settings.clientCAPath = table.nonEmptyString("client_ca")
        if settings.clientCAPath != nil, !table.contains("tls_cert") {
            table.report("client_ca", "needs tls_cert and tls_key (client certificates come with TLS)")
        }
        if table.contains("client_auth"), !table.contains("client_ca") {
            table.report("client_auth", "has no effect without client_ca")
        }
        settings.clientAuth = table.choice("client_auth", among: [ListenSettings.ClientAuth.request, .require]) ?? settings.clientAuth
        if let name = table.nonEmptyString("client_cert_header") {
            if ConfigSyntax.isToken(name) {
                settings.clientCertificateHeader = name
            } else {
                table.report("client_cert_header", "\(ConfigKeyPath.quoted(name)) is not a valid header name")
            }
        }
        settings.clientCertificateHeaderFormat = table.choice(
            "client_cert_header_format", among: [ClientCertificateHeaderFormat.xfcc, .pem]) ?? settings.clientCertificateHeaderFormat
        for range in table.strings("trusted_proxies") ?? [] {
            if let parsed = AddressRange(range) {
                settings.trustedProxies.append(parsed)
            } else {
                table.report("trusted_proxies", "\(ConfigKeyPath.quoted(range)) is not an IP address or CIDR range (10.0.0.0/8, ::1)")
            }
        }
        let usesHeader = table.contains("client_cert_header")
        if usesHeader, !table.contains("trusted_proxies") {
            table.report("client_cert_header", "needs trusted_proxies (the addresses of the proxies that set it)")
        }
        for key in ["client_cert_header_format", "trusted_proxies"] where table.contains(key) && !usesHeader {
            table.report(key, "has no effect without client_cert_header")
        }
    }

    static func adminSettings(_ table: TOMLReader) -> AdminSettings {
        var settings = AdminSettings()
        settings.address = table.parsed("address", ConfigSyntax.socketAddress) ?? settings.address
        table.finish()
        return settings
    }

    /// nil when `url` is missing or invalid (there is no default upstream).
    static func upstreamSettings(_ table: TOMLReader) -> UpstreamSettings? {
        let url = table.parsed("url", ConfigSyntax.baseURL)
        if !table.contains("url") { table.sink.add(.required(table.keyPath("url"))) }
        var settings = url.map(UpstreamSettings.init(url:))
        let connectTimeout = positiveDuration(table, "connect_timeout")
        let timeout = positiveDuration(table, "timeout")
        let forwardToken = table.bool("forward_token")
        let caFile = table.nonEmptyString("ca_file")
        let protocolVersion = table.choice("protocol", among: [UpstreamProtocol.http1, .http2])
        if caFile != nil, let url, url.scheme != "https" { table.report("ca_file", "only used by an https:// upstream url") }
        settings?.caFile = caFile
        if let connectTimeout { settings?.connectTimeout = connectTimeout }
        if let timeout { settings?.timeout = timeout }
        if let forwardToken { settings?.forwardToken = forwardToken }
        if let protocolVersion { settings?.protocolVersion = protocolVersion }
        table.finish()
        return settings
    }

    static func verificationSettings(_ table: TOMLReader) -> VerificationSettings {
        var settings = VerificationSettings()
        if let leeway = table.duration("leeway") {
            if leeway > VerificationSettings.maxLeeway {
                table.report("leeway", "at most \(VerificationSettings.maxLeeway.components.seconds)s: a clock that far off is broken, "
                    + "and sign-outs are kept only that long past a token's exp")
            } else {
                settings.leeway = leeway
            }
        }
        settings.cacheSize = table.integer("cache_size", in: 0...Int.max) ?? settings.cacheSize
        settings.tokenCookie = table.nonEmptyString("token_cookie")
        if let cookie = settings.tokenCookie, !ConfigSyntax.isToken(cookie) {
            table.report("token_cookie", "\(ConfigKeyPath.quoted(cookie)) is not a valid cookie name")
        }
        settings.tokenHeader = table.nonEmptyString("token_header")
        if let header = settings.tokenHeader {
            if !ConfigSyntax.isToken(header) {
                table.report("token_header", "\(ConfigKeyPath.quoted(header)) is not a valid header name")
            } else if header.lowercased() == "authorization" {
                table.report("token_header", "Authorization is always read; token_header names an additional header")
            }
        }
        settings.bypassCORSPreflight = table.bool("bypass_cors_preflight") ?? settings.bypassCORSPreflight
        table.finish()
        return settings
    }

    static func jwksSettings(_ table: TOMLReader) -> JWKSSettings {
        var settings = JWKSSettings()
        let minRefresh = table.duration("min_refresh")
        let maxRefresh = table.duration("max_refresh")
        settings.minRefresh = minRefresh ?? settings.minRefresh
        settings.maxRefresh = maxRefresh ?? settings.maxRefresh
        // Compared only when neither was rejected already (a rejected one keeps its default and would mislead).
        let rejected = (table.contains("min_refresh") && minRefresh == nil) || (table.contains("max_refresh") && maxRefresh == nil)
        if !rejected, settings.minRefresh > settings.maxRefresh {
            let (minimum, maximum) = (settings.minRefresh.configDescription, settings.maxRefresh.configDescription)
            table.report(minRefresh != nil ? "min_refresh" : "max_refresh", "min_refresh (\(minimum)) must not exceed max_refresh (\(maximum))")
        }
        // Durations cannot be negative, so any parsed cooldown already satisfies >= 0.
        settings.unknownKidCooldown = table.duration("unknown_kid_cooldown") ?? settings.unknownKidCooldown
        settings.maxStale = table.duration("max_stale") ?? settings.maxStale
        settings.fetchTimeout = positiveDuration(table, "fetch_timeout") ?? settings.fetchTimeout
        settings.cacheDirectory = table.nonEmptyString("cache_dir")
        table.finish()
        return settings
    }

    /// A duration that must be more than zero: a zero timeout would fail every fetch or request.
    static func positiveDuration(_ table: TOMLReader, _ key: String) -> Duration? {
        guard let duration = table.duration(key) else { return nil }
        guard duration > .zero else {
            table.report(key, "must be greater than 0s")
            return nil
        }
        return duration
    }
}
