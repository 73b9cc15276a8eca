import GatehouseTokens
package import GatehouseVocabulary

/// What a back-channel logout came to (`ProxyServices.backchannelLogout`), for the core to answer, log and count
/// (`ExchangeStateMachine.loggedOut(_:generation:)`).
package struct LogoutOutcome: Sendable {
    package var response: LocalResponse
    /// Why the logout token was refused (its reason goes to the failure log); nil when the logout was applied, or the
    /// request never carried a token to judge (a malformed body, the rate limit: answered without a log line).
    package var refusal: AuthFailure?
    /// The logout token, for the failure log's fingerprint.
    package var token: Substring?

    package init(response: LocalResponse, refusal: AuthFailure? = nil, token: Substring? = nil) {
        self.response = response
        self.refusal = refusal
        self.token = token
    }
}
