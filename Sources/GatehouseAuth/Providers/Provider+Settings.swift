import Foundation
public import GatehouseConfig

extension Provider {
    /// Builds the runtime provider from validated settings.
    ///
    /// Presets supply their published issuer and JWKS URL (each overridable for emulators and
    /// tests), their default extra headers, and their claim rules (`Provider+Rules`).
    public init(settings: ProviderSettings, globalHeaders: [HeaderMapping], resourceAudiences: [String] = []) {
        let issuers: [String]
        let keySource: KeySource
        var presetHeaders: [HeaderMapping] = []
        let unreachable = URL(fileURLWithPath: "/")  // only for settings validation already refused
        switch settings.type {
        case .jwks:
            issuers = [settings.issuer ?? ""]
            keySource = .jwksURL(settings.jwksURI ?? unreachable)
        case .oidc:
            let issuer = settings.issuer ?? ""
            issuers = [issuer]
            keySource = settings.jwksURI.map(KeySource.jwksURL) ?? .discovery(issuer: issuer)
        case .google:
            issuers = settings.issuer.map { [$0] } ?? GooglePreset.issuers
            keySource = .jwksURL(settings.jwksURI ?? GooglePreset.jwksURL)
        case .apple:
            issuers = [settings.issuer ?? ApplePreset.issuer]
            keySource = .jwksURL(settings.jwksURI ?? ApplePreset.jwksURL)
        case .firebase:
            issuers = [settings.issuer ?? FirebasePreset.issuer(projectID: settings.projectID ?? "")]
            keySource = .jwksURL(settings.jwksURI ?? FirebasePreset.jwksURL)
            presetHeaders = FirebasePreset.defaultHeaders
        case .introspection:
            issuers = settings.issuer.map { [$0] } ?? []
            keySource = .introspection
        case .kubernetes:
            issuers = [settings.issuer ?? KubernetesPreset.defaultIssuer]
            keySource = .kubernetes(KubernetesAPI(
                url: settings.apiServer ?? KubernetesPreset.apiServerFromEnvironment() ?? unreachable,
                caFile: settings.caFile ?? KubernetesPreset.defaultCAFile, tokenFile: settings.tokenFile ?? KubernetesPreset.defaultTokenFile))
            presetHeaders = KubernetesPreset.defaultHeaders
        case .entra:
            issuers = []
            keySource = .jwksURL(settings.jwksURI ?? EntraPreset.jwksURL)
            presetHeaders = EntraPreset.defaultHeaders
        case .cognito:
            let issuer = settings.issuer ?? CognitoPreset.issuer(region: settings.region ?? "", userPoolID: settings.userPoolID ?? "")
            issuers = [issuer]
            keySource = .jwksURL(settings.jwksURI ?? CognitoPreset.jwksURL(issuer: issuer) ?? unreachable)
            presetHeaders = CognitoPreset.defaultHeaders
        }
        let audiences: Set<String> = switch settings.type {
        case .firebase: Set([settings.projectID].compactMap { $0 })
        case .cognito: Set(settings.clientIDs)
        // A resource's url is taken here only to be held to its resource by the gatekeeper (`Gatekeeper.resourceAudienceFailure`).
        default: Set(settings.audiences + resourceAudiences)
        }
        let algorithms = settings.algorithms.map { Set($0.compactMap(JWSAlgorithm.init(rawValue:))) }
            ?? Set(JWSAlgorithm.allCases)
        self.init(
            name: settings.name,
            type: settings.type,
            issuers: issuers,
            audiences: audiences,
            algorithms: algorithms,
            keySource: keySource,
            headerMappings: HeaderMapping.merging(
                HeaderMapping.merging(globalHeaders, overriddenBy: presetHeaders), overriddenBy: settings.headers),
            hostedDomains: Set(settings.hostedDomains),
            tokenUse: settings.tokenUse,
            tokenTypes: settings.tokenTypes,
            introspection: settings.type == .introspection ? settings.introspection : nil,
            tenants: Set(settings.tenants)
        )
        backchannelLogout = settings.backchannelLogout
        logoutAudiences = Set(settings.audiences)
        if settings.type == .entra {
            issuerTemplates = (settings.issuer.map { [$0] } ?? [EntraPreset.v2Issuer] + (settings.acceptV1 ? [EntraPreset.v1Issuer] : []))
                .compactMap(EntraPreset.Template.init)
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
