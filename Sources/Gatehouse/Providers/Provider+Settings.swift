public import Foundation

extension Provider {
    /// Builds the runtime provider from validated settings.
    ///
    /// Issue scope: `jwks` and `oidc` are complete; the presets (google, apple, firebase, cognito)
    /// get their published issuer and JWKS URL here and their own claim rules in `Provider+Rules`.
    public init(settings: ProviderSettings, globalHeaders: [HeaderMapping]) {
        let issuers: [String]
        let keySource: KeySource
        switch settings.type {
        case .jwks:
            issuers = [settings.issuer ?? ""]
            keySource = .jwksURL(settings.jwksURI ?? URL(fileURLWithPath: "/"))
        case .oidc:
            let issuer = settings.issuer ?? ""
            issuers = [issuer]
            keySource = settings.jwksURI.map(KeySource.jwksURL) ?? .discovery(issuer: issuer)
        case .google:
            issuers = settings.issuer.map { [$0] } ?? ["https://accounts.google.com", "accounts.google.com"]
            keySource = .jwksURL(settings.jwksURI ?? URL(string: "https://www.googleapis.com/oauth2/v3/certs")!)  // safe: literal
        case .apple:
            issuers = [settings.issuer ?? "https://appleid.apple.com"]
            keySource = .jwksURL(settings.jwksURI ?? URL(string: "https://appleid.apple.com/auth/keys")!)  // safe: literal
        case .firebase:
            let project = settings.projectID ?? ""
            issuers = [settings.issuer ?? "https://securetoken.google.com/\(project)"]
            let url = "https://www.googleapis.com/service_accounts/v1/jwk/securetoken@system.gserviceaccount.com"
            keySource = .jwksURL(settings.jwksURI ?? URL(string: url)!)  // safe: literal
        case .cognito:
            let issuer = settings.issuer
                ?? "https://cognito-idp.\(settings.region ?? "").amazonaws.com/\(settings.userPoolID ?? "")"
            issuers = [issuer]
            keySource = .jwksURL(settings.jwksURI ?? URL(string: issuer + "/.well-known/jwks.json") ?? URL(fileURLWithPath: "/"))
        }
        let audiences: Set<String> = switch settings.type {
        case .firebase: Set([settings.projectID].compactMap { $0 })
        case .cognito: Set(settings.clientIDs)
        default: Set(settings.audiences)
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
            headerMappings: HeaderMapping.merging(globalHeaders, overriddenBy: settings.headers),
            hostedDomains: Set(settings.hostedDomains),
            tokenUse: settings.tokenUse
        )
    }
}

extension HeaderMapping {
    /// `base` with `overrides` applied: an override of the same (case-insensitive) name replaces the
    /// base entry in place; new names are appended.
    static func merging(_ base: [HeaderMapping], overriddenBy overrides: [HeaderMapping]) -> [HeaderMapping] {
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
