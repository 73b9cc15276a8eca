public import Foundation
public import GatehouseConfig
public import GatehouseVocabulary

/// A configured identity provider as the verifier uses it: who may issue, which keys, which
/// audiences, and the checks particular to its type. An object: a new token's verification reads its provider several
/// times, and a struct of these members was copied for each call (11 retains and releases a copy: issue 57).
public final class Provider: Sendable {
    public let name: String
    public let type: ProviderType
    /// Exact `iss` values this provider's tokens carry (Google has two).
    public let issuers: [String]
    public let audiences: Set<String>
    public let algorithms: Set<JWSAlgorithm>
    public let keySource: KeySource
    /// `[headers]` with this provider's `[provider.headers]` applied.
    public let headerMappings: [HeaderMapping]
    /// Google Workspace domains accepted in `hd`; empty accepts any account.
    public let hostedDomains: Set<String>
    /// Cognito: which kind of token is accepted.
    public let tokenUse: ProviderSettings.TokenUse
    /// The JWS `typ` values accepted, lower-cased without `application/`; nil: any.
    public let tokenTypes: [String]?
    /// Entra: issuers with `{tenantid}`, filled with each token's own `tid`; and the tenants allowed (`*`: any).
    let issuerTemplates: [EntraPreset.Template]
    public let tenants: Set<String>
    /// `type = "introspection"`: how its opaque tokens are judged.
    public let introspection: IntrospectionSettings?
    /// OpenID Connect Back-Channel Logout (`backchannel_logout = true`): how its logout tokens are judged; nil: off.
    package let backchannelLogout: BackchannelLogoutSettings?
    /// The audiences a logout token may name: the configured client ids only (never a `[[resource]]` url).
    let logoutAudiences: Set<String>

    /// Where the provider's keys come from.
    public enum KeySource: Sendable, Equatable {
        case jwksURL(URL)
        /// OIDC discovery: `<issuer>/.well-known/openid-configuration`, whose `issuer` must equal this one.
        case discovery(issuer: String)
        /// None: opaque tokens, judged by the issuer's introspection endpoint (`Introspector`).
        case introspection
        /// A Kubernetes API server's `/openid/v1/jwks`, over TLS with its CA, asked with a bearer token file.
        case kubernetes(KubernetesAPI)
    }

    package init(
        name: String,
        type: ProviderType,
        issuers: [String],
        audiences: Set<String>,
        algorithms: Set<JWSAlgorithm>,
        keySource: KeySource,
        headerMappings: [HeaderMapping],
        hostedDomains: Set<String> = [],
        tokenUse: ProviderSettings.TokenUse = .access,
        tokenTypes: [String]? = nil,
        introspection: IntrospectionSettings? = nil,
        tenants: Set<String> = [],
        issuerTemplates: [EntraPreset.Template] = [],
        backchannelLogout: BackchannelLogoutSettings? = nil,
        logoutAudiences: Set<String> = []
    ) {
        self.issuerTemplates = issuerTemplates
        self.backchannelLogout = backchannelLogout
        self.logoutAudiences = logoutAudiences
        self.tenants = tenants
        self.tokenTypes = tokenTypes
        self.introspection = introspection
        self.hostedDomains = hostedDomains
        self.tokenUse = tokenUse
        self.name = name
        self.type = type
        self.issuers = issuers
        self.audiences = audiences
        self.algorithms = algorithms
        self.keySource = keySource
        self.headerMappings = headerMappings
    }
}
