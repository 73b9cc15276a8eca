/// `[[provider]] backchannel_logout = true`: the provider signs users out by POSTing a logout token to
/// `/.gatehouse/backchannel-logout/<name>` (OpenID Connect Back-Channel Logout 1.0, docs/reference.md §7.3).
public struct BackchannelLogoutSettings: Sendable, Equatable {
    /// `backchannel_logout_require_typ`: the logout token's JWS `typ` must be `logout+jwt` (when false, a `typ` that
    /// is present must still be it).
    public var requireTyp = false
    /// `max_logout_token_age`: how old (by `iat`) a logout token without `exp` may be (drafts of the spec omitted `exp`).
    public var maxTokenAge: Duration = .seconds(300)

    public init(requireTyp: Bool = false, maxTokenAge: Duration = .seconds(300)) {
        self.requireTyp = requireTyp
        self.maxTokenAge = maxTokenAge
    }
}
