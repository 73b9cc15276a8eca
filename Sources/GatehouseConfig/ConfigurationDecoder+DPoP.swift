import Foundation

// [dpop]: how DPoP proofs (RFC 9449) are judged, for the providers and routes that accept them.
extension ConfigurationDecoder {
    static func dpopSettings(_ table: TOMLReader) -> DPoPSettings {
        var settings = DPoPSettings()
        if let lifetime = table.duration("proof_lifetime") {
            if lifetime < .seconds(1) || lifetime > .seconds(600) {
                table.report("proof_lifetime", "must be from 1s to 10m")
            } else {
                settings.proofLifetime = lifetime
            }
        }
        settings.externalURL = table.parsed("external_url", externalURL)
        settings.nonce = table.bool("nonce") ?? settings.nonce
        settings.nonceSecret = secretSetting(table, "nonce_secret")
        if let lifetime = table.duration("nonce_lifetime") {
            if lifetime < .seconds(10) || lifetime > .seconds(86400) {
                table.report("nonce_lifetime", "must be from 10s to 24h")
            } else {
                settings.nonceLifetime = lifetime
            }
        }
        if !settings.nonce {
            for key in ["nonce_secret", "nonce_secret_file", "nonce_lifetime"] where table.contains(key) {
                table.report(key, "has no effect without nonce = true")
            }
        }
        settings.replayCacheSize = table.integer("replay_cache_size", in: 1000...100_000_000) ?? settings.replayCacheSize
        table.finish()
        return settings
    }

    /// The origin clients address: `https://host[:port]`, nothing after the authority.
    private static func externalURL(_ text: String) -> Result<String, InvalidConfigValue> {
        ConfigSyntax.baseURL(text).flatMap { url in
            let path = url.path
            guard path.isEmpty || path == "/" else {
                return .failure(InvalidConfigValue("must be a scheme and host only, such as \"https://api.example.com\" (no path)"))
            }
            var origin = text
            if origin.hasSuffix("/") { origin.removeLast() }
            return .success(origin)
        }
    }
}

extension DPoPMode {
    package static let all: [DPoPMode] = [.off, .allowed, .required]
}
