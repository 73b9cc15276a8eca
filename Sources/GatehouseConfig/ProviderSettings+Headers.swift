/// The identity headers a provider's verified tokens set (docs/reference.md §5): `[headers]`, then the preset's own,
/// then the provider's `[provider.headers]`, a later one of the same name replacing the earlier in place.
extension ProviderSettings {
    package func headerMappings(globalHeaders: [HeaderMapping]) -> [HeaderMapping] {
        HeaderMapping.merging(HeaderMapping.merging(globalHeaders, overriddenBy: type.presetHeaders), overriddenBy: headers)
    }
}

extension ProviderType {
    /// The headers a preset sets by default, beside `[headers]`.
    package var presetHeaders: [HeaderMapping] {
        switch self {
        case .firebase: [HeaderMapping(name: "X-Auth-Sign-In-Provider", claimPath: "firebase.sign_in_provider")]
        case .cognito: [HeaderMapping(name: "X-Auth-Username", claimPath: "username")]
        case .entra: [HeaderMapping(name: "X-Auth-Tenant-Id", claimPath: "tid"), HeaderMapping(name: "X-Auth-Object-Id", claimPath: "oid")]
        case .kubernetes: [
            HeaderMapping(name: "X-Auth-K8s-Namespace", claimPath: "kubernetes_namespace"),
            HeaderMapping(name: "X-Auth-K8s-Service-Account", claimPath: "kubernetes_service_account_name"),
        ]
        case .jwks, .oidc, .google, .apple, .introspection: []
        }
    }
}

extension HeaderMapping {
    /// `base` with `overrides` applied: an override of the same (case-insensitive) name replaces the
    /// base entry in place; new names are appended.
    package static func merging(_ base: [HeaderMapping], overriddenBy overrides: [HeaderMapping]) -> [HeaderMapping] {
        var result = base
        for override in overrides {
            if let index = result.firstIndex(where: { $0.name.lowercased() == override.name.lowercased() }) {
                result[index] = override
            } else {
                result.append(override)
            }
        }
        return result
    }
}
