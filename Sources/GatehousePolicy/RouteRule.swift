import GatehouseSyntax
public import GatehouseRules
public import GatehouseConfig

/// What a route demands of a request, resolved from its `[[route]]` entry (or the default rule). A class, immutable:
/// every request, decision and check passes its route's rule along, one retain instead of a copy of each member
/// (issue 56: four copies a request, seven references each).
public final class RouteRule: Sendable, Equatable {
    /// Whether a token is needed.
    public let auth: RouteSettings.Auth
    /// Provider names whose tokens are accepted here; empty means any configured provider.
    public let providers: Set<String>
    /// Every one of these scopes is required (`scope` / `scp` claims).
    public let scopes: [String]
    /// Any one of these groups is enough (`groups` / `cognito:groups` claims); empty means no requirement.
    public let groups: [String]
    /// Any one of these app roles is enough (`roles` claim); empty means no requirement.
    public let roles: [String]
    /// Any one of these Kubernetes service accounts (`namespace/name`, `namespace/*`); empty means no requirement.
    public let serviceAccounts: [String]
    /// Accepted e-mail domains, ASCII lower-cased; empty means no requirement.
    public let emailDomains: [String]
    /// Whether `email_verified` must be true.
    public let requireEmailVerified: Bool
    /// DPoP on this route; nil: each provider's own `dpop`.
    public let dpop: DPoPMode?
    /// `when`: a CEL rule; only `true` allows.
    public let condition: RuleExpression?
    /// Position of the `[[route]]` entry in the configuration; nil for the default rule.
    public let index: Int?

    public init(
        auth: RouteSettings.Auth,
        providers: Set<String> = [],
        scopes: [String] = [],
        groups: [String] = [],
        roles: [String] = [],
        serviceAccounts: [String] = [],
        emailDomains: [String] = [],
        requireEmailVerified: Bool = false,
        dpop: DPoPMode? = nil,
        condition: RuleExpression? = nil,
        index: Int? = nil
    ) {
        self.auth = auth
        self.providers = providers
        self.scopes = scopes
        self.groups = groups
        self.roles = roles
        self.serviceAccounts = serviceAccounts
        self.emailDomains = emailDomains.map(Self.asciiLowercased)
        self.requireEmailVerified = requireEmailVerified
        self.dpop = dpop
        self.condition = condition
        self.index = index
    }

    /// The rule of the `index`-th `[[route]]` entry.
    public convenience init(_ settings: RouteSettings, index: Int) {
        self.init(
            auth: settings.auth,
            providers: Set(settings.providers),
            scopes: settings.scopes,
            groups: settings.groups,
            roles: settings.roles,
            serviceAccounts: settings.serviceAccounts,
            emailDomains: settings.emailDomains,
            requireEmailVerified: settings.requireEmailVerified,
            dpop: settings.dpop,
            condition: settings.when,
            index: index
        )
    }

    public static func == (first: RouteRule, second: RouteRule) -> Bool {
        first === second
            || (first.auth == second.auth && first.providers == second.providers && first.scopes == second.scopes
                && first.groups == second.groups && first.roles == second.roles && first.serviceAccounts == second.serviceAccounts
                && first.emailDomains == second.emailDomains && first.requireEmailVerified == second.requireEmailVerified
                && first.dpop == second.dpop && first.condition == second.condition && first.index == second.index)
    }

    /// Applies when no route matches: a token is required, nothing more.
    public static let defaultRule = RouteRule(auth: .required)

    /// Whether tokens of `provider` are accepted on this route.
    public func allows(provider: String) -> Bool {
        providers.isEmpty || providers.contains(provider)
    }

    static func asciiLowercased(_ string: String) -> String {
        String(decoding: string.utf8.map(ASCIIByte.lowercased), as: UTF8.self)
    }
}
