// [[provider]] backchannel_logout and its two companions (oidc and jwks providers).
extension ConfigurationDecoder {
    static let backchannelLogoutKeys = ["backchannel_logout", "backchannel_logout_require_typ", "max_logout_token_age"]

    /// nil unless `backchannel_logout = true`; its companions without it are a mistake, reported.
    static func backchannelLogout(_ table: TOMLReader) -> BackchannelLogoutSettings? {
        let enabled = table.bool("backchannel_logout") ?? false
        var settings = BackchannelLogoutSettings()
        settings.requireTyp = table.bool("backchannel_logout_require_typ") ?? settings.requireTyp
        if let age = table.duration("max_logout_token_age") {
            if age <= .zero || age > .seconds(86_400) {
                table.report("max_logout_token_age", "must be more than 0s and at most 24h")
            } else {
                settings.maxTokenAge = age
            }
        }
        guard enabled else {
            for key in backchannelLogoutKeys.dropFirst() where table.contains(key) {
                table.report(key, "only meaningful with backchannel_logout = true")
            }
            return nil
        }
        return settings
    }
}
