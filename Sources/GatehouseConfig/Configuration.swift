public import Foundation
public import GatehouseRules

/// The whole, validated Gatehouse configuration (docs/reference.md §3).
///
/// Built by `Configuration.parse(toml:)` / `Configuration.load(fromFile:)`, which reject unknown
/// keys and gather every error with its key path. Every field has the documented default.
public struct Configuration: Sendable, Equatable {
    public var listen = ListenSettings()
    public var admin = AdminSettings()
    public var upstream: UpstreamSettings
    public var failureLog = FailureLogSettings()
    public var log = LogSettings()
    public var verification = VerificationSettings()
    public var jwks = JWKSSettings()
    public var headers = HeaderSettings()
    public var providers: [ProviderSettings]
    public var routes: [RouteSettings] = []
    /// `[[resource]]`: the OAuth protected resources (MCP servers among them) Gatehouse fronts.
    public var resources: [ResourceSettings] = []
    public var revocation: RevocationSettings?
    public var dpop = DPoPSettings()
    /// `[ext_authz]`: absent unless configured.
    public var extAuthz: ExtAuthzSettings?
    /// `[assertion]`: the signed identity assertion for the upstream; nil when not configured.
    public var assertion: AssertionSettings?
    /// `[tracing]`: OpenTelemetry traces; nil (off) when not configured.
    public var tracing: TracingSettings?
    /// Whether the client port forwards requests to `[upstream]`. Only an `[ext_authz]` configuration without an
    /// `[upstream]` table goes without: Gatehouse is then the authorizer only, and `upstream` holds no address.
    public var servesClientPort = true

    public init(upstream: UpstreamSettings, providers: [ProviderSettings]) {
        self.upstream = upstream
        self.providers = providers
    }
}

/// `host:port` as written in the config; host may be an IPv4/IPv6 literal or a name.
public struct SocketAddressSetting: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

public struct ListenSettings: Sendable, Equatable {
    public var address = SocketAddressSetting(host: "0.0.0.0", port: 8080)
    public var tlsCertificatePath: String?
    public var tlsKeyPath: String?
    public var drainTimeout: Duration = .seconds(10)
    /// How long a client may take to send the next request head, a sign-out body, or the next
    /// bytes of a request body it is streaming (slowloris).
    public var idleTimeout: Duration = .seconds(60)
    public var maxHeaderBytes = 16384
    public var tokenMaxBytes = 8192
    /// Serve HTTP/2 too: prior knowledge on a cleartext port, ALPN `h2` with TLS.
    public var http2 = true
    /// PEM bundle of the CAs client certificates must chain to (certificate-bound tokens, RFC 8705); nil: none asked.
    public var clientCAPath: String?
    public enum ClientAuth: String, Sendable, Equatable { case request, require }
    /// `request`: a client may present a certificate; `require`: the handshake fails without one.
    public var clientAuth: ClientAuth = .request
    /// The header a proxy in front forwards the client certificate in (when it terminates mTLS).
    public var clientCertificateHeader: String?
    public var clientCertificateHeaderFormat: ClientCertificateHeaderFormat = .pem
    /// Where `client_cert_header` is believed from.
    public var trustedProxies: [AddressRange] = []
    public init() {}
}

public struct AdminSettings: Sendable, Equatable {
    public var address = SocketAddressSetting(host: "127.0.0.1", port: 9901)
    public init() {}
}

public struct UpstreamSettings: Sendable, Equatable {
    public var url: URL
    public var connectTimeout: Duration = .seconds(2)
    public var timeout: Duration = .seconds(30)
    public var forwardToken = true
    /// PEM bundle of the CAs an https upstream's certificate must chain to; nil: the system's trust store.
    public var caFile: String?
    /// The protocol Gatehouse speaks to the upstream.
    public var protocolVersion: UpstreamProtocol = .http1
    public init(url: URL) { self.url = url }

    /// An authorizer only's (`Configuration.servesClientPort` false): no request is ever forwarded to it.
    static let none = UpstreamSettings(url: URL(string: "http://127.0.0.1:0")!)  // safe: a constant valid URL
}

/// `[upstream] protocol`: HTTP/1.1 over pooled keep-alive connections, or HTTP/2 over a few
/// multiplexed ones (prior knowledge for `http://`, ALPN `h2` for `https://`). gRPC needs `http2`.
public enum UpstreamProtocol: String, Sendable, Equatable {
    case http1
    case http2
}

public struct FailureLogSettings: Sendable, Equatable {
    /// `"-"` means standard output.
    public var path = "-"
    public var maxLinesPerSecond = 1000
    public var pseudonymize = false
    public var pseudonymizeKeyFile: String?
    public init() {}
}

public struct LogSettings: Sendable, Equatable {
    public enum Format: String, Sendable, Equatable { case text, json }
    public enum Level: String, Sendable, Equatable { case trace, debug, info, notice, warning, error, critical }
    public var format: Format = .text
    public var level: Level = .info
    public init() {}
}

public struct VerificationSettings: Sendable, Equatable {
    public var leeway: Duration = .seconds(60)
    /// The largest `leeway` accepted. A revocation is kept this long past its token's `exp`
    /// (`Revocation.retentionAfterExpiry`), so no leeway a reload may set lets a signed-out token verify again.
    public static let maxLeeway: Duration = .seconds(600)
    public var cacheSize = 10000
    public var tokenCookie: String?
    public var tokenHeader: String?
    public var bypassCORSPreflight = false
    public init() {}
}

public struct JWKSSettings: Sendable, Equatable {
    public var minRefresh: Duration = .seconds(300)
    public var maxRefresh: Duration = .seconds(86400)
    public var unknownKidCooldown: Duration = .seconds(30)
    public var maxStale: Duration = .seconds(72 * 3600)
    public var fetchTimeout: Duration = .seconds(5)
    public var cacheDirectory: String?
    public init() {}
}

/// One identity header: the upstream header name and the claim it carries (dot path).
public struct HeaderMapping: Sendable, Equatable {
    public var name: String
    /// The claim whose value the header carries; empty when `expression` computes it.
    public var claimPath: String
    /// `{ expression = '…' }`: a CEL expression over the claims computes the value.
    public var expression: RuleExpression?
    public init(name: String, claimPath: String) {
        self.name = name
        self.claimPath = claimPath
    }

    public init(name: String, expression: RuleExpression) {
        self.name = name
        self.claimPath = ""
        self.expression = expression
    }
}

public struct HeaderSettings: Sendable, Equatable {
    /// In file order. Defaults to the five `X-Auth-*` headers of docs/reference.md §3.
    public var mappings: [HeaderMapping] = HeaderSettings.defaultMappings
    public var forwardClaimsJSON = true
    public init() {}

    public static let defaultMappings: [HeaderMapping] = [
        HeaderMapping(name: "X-Auth-Subject", claimPath: "sub"),
        HeaderMapping(name: "X-Auth-Email", claimPath: "email"),
        HeaderMapping(name: "X-Auth-Email-Verified", claimPath: "email_verified"),
        HeaderMapping(name: "X-Auth-Name", claimPath: "name"),
        HeaderMapping(name: "X-Auth-Picture", claimPath: "picture"),
    ]
}

public enum ProviderType: String, Sendable, Equatable, CaseIterable {
    case google, apple, firebase, cognito, oidc, jwks
    /// Opaque tokens judged by the issuer's RFC 7662 introspection endpoint.
    case introspection
    /// Microsoft Entra ID, multi-tenant apps included.
    case entra
    /// Kubernetes service-account tokens.
    case kubernetes
}

public struct ProviderSettings: Sendable, Equatable {
    public var name: String
    public var type: ProviderType
    /// Explicit issuer (required for oidc/jwks; overrides a preset's).
    public var issuer: String?
    /// Explicit JWKS URL (required for jwks; overrides a preset's or discovery's).
    public var jwksURI: URL?
    public var audiences: [String] = []
    /// nil: every asymmetric JWS algorithm.
    public var algorithms: [String]?
    public var hostedDomains: [String] = []
    public var revocationEndpoint: URL?
    /// Per-provider additions/overrides of `[headers]`.
    public var headers: [HeaderMapping] = []
    public var projectID: String?
    public var region: String?
    public var userPoolID: String?
    public var clientIDs: [String] = []
    public enum TokenUse: String, Sendable, Equatable { case access, id, any }
    public var tokenUse: TokenUse = .access
    public var userinfo = false
    /// The pool's hosted-UI domain (userInfo, revoke).
    public var domain: URL?
    /// Overrides `<domain>/oauth2/userInfo`.
    public var userinfoURI: URL?
    /// Sender-constrained tokens of this provider (a route's `dpop` overrides it).
    public var dpop: DPoPMode = .allowed
    /// entra: the tenant ids whose tokens are accepted (lower-cased), or `["*"]` for any tenant.
    public var tenants: [String] = []
    /// entra: also accept v1.0 tokens (`https://sts.windows.net/{tid}/`).
    public var acceptV1 = false
    /// kubernetes: the API server (nil: from `KUBERNETES_SERVICE_HOST`/`_PORT`), its CA, and the token to ask with.
    public var apiServer: URL?
    public var caFile: String?
    public var tokenFile: String?
    /// kubernetes: ask the API server (TokenReview) whether it still authenticates each token.
    public var tokenReview = false
    /// introspection: how opaque tokens are judged (RFC 7662).
    public var introspection = IntrospectionSettings()
    /// oidc, jwks: the JWS `typ` values accepted (RFC 9068 `at+jwt`, so an ID token is not taken for an
    /// access token); nil: any `typ`.
    public var tokenTypes: [String]?
    /// oidc, jwks: OpenID Connect Back-Channel Logout (`backchannel_logout = true`); nil: off.
    public var backchannelLogout: BackchannelLogoutSettings?
    public init(name: String, type: ProviderType) {
        self.name = name
        self.type = type
    }
}

/// `type = "introspection"`: where and how opaque tokens are introspected, and how long answers are kept.
public struct IntrospectionSettings: Sendable, Equatable {
    public enum ClientAuth: String, Sendable, Equatable { case basic, post }
    /// nil: from the issuer's RFC 8414 metadata (or its OpenID discovery document).
    public var endpoint: URL?
    public var clientID = ""
    public var clientSecret: SecretSetting?
    public var clientAuth: ClientAuth = .basic
    public var cacheTTL: Duration = .seconds(60)
    public var negativeCacheTTL: Duration = .seconds(5)
    public var cacheMaxEntries = 10000
    public var maxInFlight = 32
    /// Calls started per second at most (a flood of new tokens is answered 503 beyond it).
    public var maxCallsPerSecond = 1000
    /// Only tokens starting with this go to this provider (`ya29.`).
    public var tokenPrefix: String?
    public init() {}
}

public struct RouteSettings: Sendable, Equatable {
    public enum Match: Sendable, Equatable {
        /// Segment-aware prefix: `/health` matches `/health` and `/health/x`, not `/healthy`.
        case prefix(String)
        /// Exact path.
        case path(String)
    }
    public enum Auth: String, Sendable, Equatable { case `public`, optional, required }
    public var match: Match
    /// Request hosts the route applies to (`orders.example.com`, `*.shop.example.com`); empty means every host.
    public var hosts: [String] = []
    /// Pairs every one of which an ext_authz Check's `context_extensions` must hold (`service = "billing"`); empty
    /// means any request. A request on a door, or a Check over Envoy's HTTP protocol, has no context.
    public var context: [String: String] = [:]
    /// Upper-cased method names; empty means any method.
    public var methods: [String] = []
    /// Under an MCP `[[resource]]`: patterns (`*` any run) the JSON-RPC message's `method` must match; empty: any message or none.
    public var mcpMethods: [String] = []
    /// Patterns the tool of a `tools/call` message must match (only such a message matches); empty: no requirement.
    public var mcpTools: [String] = []
    public var auth: Auth = .required
    /// Provider names; empty means any configured provider.
    public var providers: [String] = []
    public var scopes: [String] = []
    public var groups: [String] = []
    /// Any one of these app roles (`roles` claim, Entra and others).
    public var roles: [String] = []
    /// Any one of these Kubernetes service accounts, `namespace/name` or `namespace/*`.
    public var serviceAccounts: [String] = []
    public var emailDomains: [String] = []
    public var requireEmailVerified = false
    /// nil: each provider's own `dpop`.
    public var dpop: DPoPMode?
    /// `when`: a CEL rule over the claims and the request; only `true` allows (else 403 `forbidden`).
    public var when: RuleExpression?
    public init(match: Match) { self.match = match }
}

/// `dpop` of a provider or route (docs/reference.md §3): whether DPoP-bound tokens (RFC 9449) are
/// accepted, and whether plain bearer tokens still are. A token bound with `cnf.jkt` is never accepted
/// as a bearer token, whatever the mode.
public enum DPoPMode: String, Sendable, Equatable {
    /// The `DPoP` scheme is refused.
    case off
    /// A DPoP-bound token comes with a valid proof; an unbound token is a plain bearer token.
    case allowed
    /// Only DPoP-bound tokens with a valid proof.
    case required
}

/// `[dpop]`: how proofs are judged, for every provider and route that accepts them.
public struct DPoPSettings: Sendable, Equatable {
    /// How far a proof's `iat` may lie from now (each way), besides `[verification] leeway`.
    public var proofLifetime: Duration = .seconds(60)
    /// The scheme and authority clients address (`https://api.example.com`) when a load balancer in front
    /// terminates TLS or renames the host; nil: the listener's scheme and the request's Host.
    public var externalURL: String?
    /// Require server nonces (`DPoP-Nonce`).
    public var nonce = false
    /// The nonce secret shared by replicas; nil: a random one per process.
    public var nonceSecret: SecretSetting?
    public var nonceLifetime: Duration = .seconds(300)
    /// Live entries the local `jti` cache may hold; beyond it proofs are answered 503.
    public var replayCacheSize = 2_000_000
    public init() {}
}

public struct RevocationSettings: Sendable, Equatable {
    public var store = "memory"
    public var password: SecretSetting?
    public init() {}
}

/// A secret given inline, as `*_file`, or as `env:NAME`; resolved when used.
public enum SecretSetting: Sendable, Equatable {
    case inline(String)
    case file(String)
    case environment(String)
}

extension SecretSetting {
    package struct ResolveError: Error, CustomStringConvertible {
        package var description: String
    }

    /// The secret's value: inline, the file's content (one trailing newline removed), or the variable's.
    package func resolve(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> String {
        switch self {
        case .inline(let value):
            return value
        case .file(let path):
            guard let data = FileManager.default.contents(atPath: path), var text = String(data: data, encoding: .utf8) else {
                throw ResolveError(description: "cannot read secret file \(path)")
            }
            if text.hasSuffix("\r\n") { text.removeLast(2) } else if text.hasSuffix("\n") { text.removeLast() }
            return text
        case .environment(let name):
            guard let value = environment[name] else { throw ResolveError(description: "environment variable \(name) is not set") }
            return value
        }
    }
}
