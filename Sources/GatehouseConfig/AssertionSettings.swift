/// `[assertion]` (docs/reference.md §15): the JWT Gatehouse signs for the upstream on every authenticated request.
/// The keys are read when the configuration is (start, `check-config`, every reload).
public struct AssertionSettings: Sendable, Equatable {
    public var issuer: String
    /// Default: the upstream URL's origin.
    public var audience: String
    public var header = AssertionSettings.defaultHeader
    /// The request header the assertion is sent in unless `header` says otherwise.
    public static let defaultHeader = "X-Gatehouse-Assertion"
    public var lifetime: Duration = .seconds(60)
    public var signingKey: AssertionKey
    /// Published beside the signing key (rotation): public halves only.
    public var publishedKeys: [AssertionKey] = []
    /// Claims of the verified token copied in; `sub` always is.
    public var claims: [String] = []

    public init(issuer: String, audience: String, signingKey: AssertionKey) {
        self.issuer = issuer
        self.audience = audience
        self.signingKey = signingKey
    }

    /// The claims Gatehouse sets itself: `claims` may not name them.
    static let reservedClaims: Set<String> = ["iss", "aud", "sub", "iat", "exp", "nbf", "jti", "cnf", "provider", "token_iss"]
    static let maxLifetime: Duration = .seconds(600)
}
