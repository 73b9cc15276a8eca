import Foundation
public import GatehouseConfig
import GatehouseVocabulary

extension Provider {
    /// Builds the runtime provider from validated settings.
    ///
    /// Presets supply their published issuer and JWKS URL (each overridable for emulators and
    /// tests), their default extra headers (`ProviderType.presetHeaders`), and their claim rules (`Provider+Rules`).
    public convenience init(settings: ProviderSettings, globalHeaders: [HeaderMapping], resourceAudiences: [String] = []) {
        let issuers: [String]
        let keySource: KeySource
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
        case .introspection:
            issuers = settings.issuer.map { [$0] } ?? []
            keySource = .introspection
        case .kubernetes:
            issuers = [settings.issuer ?? KubernetesPreset.defaultIssuer]
            keySource = .kubernetes(KubernetesAPI(
                url: settings.apiServer ?? KubernetesPreset.apiServerFromEnvironment() ?? unreachable,
                caFile: settings.caFile ?? KubernetesPreset.defaultCAFile, tokenFile: settings.tokenFile ?? KubernetesPreset.defaultTokenFile))
        case .entra:
            issuers = []
            keySource = .jwksURL(settings.jwksURI ?? EntraPreset.jwksURL)
        case .cognito:
            let issuer = settings.issuer ?? CognitoPreset.issuer(region: settings.region ?? "", userPoolID: settings.userPoolID ?? "")
            issuers = [issuer]
            keySource = .jwksURL(settings.jwksURI ?? CognitoPreset.jwksURL(issuer: issuer) ?? unreachable)
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
            headerMappings: settings.headerMappings(globalHeaders: globalHeaders),
            hostedDomains: Set(settings.hostedDomains),
            tokenUse: settings.tokenUse,
            tokenTypes: settings.tokenTypes,
            introspection: settings.type == .introspection ? settings.introspection : nil,
            tenants: Set(settings.tenants),
            issuerTemplates: settings.type == .entra
                ? (settings.issuer.map { [$0] } ?? [EntraPreset.v2Issuer] + (settings.acceptV1 ? [EntraPreset.v1Issuer] : []))
                    .compactMap(EntraPreset.Template.init)
                : [],
            backchannelLogout: settings.backchannelLogout,
            logoutAudiences: Set(settings.audiences)
        )
    }
}
