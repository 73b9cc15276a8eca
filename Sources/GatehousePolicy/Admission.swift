package import GatehouseVocabulary
package import GatehouseTokens

/// Who a request is forwarded as.
package enum Admission: Sendable {
    /// A public route, or a CORS preflight let through by configuration: no identity headers.
    case anonymous
    /// An optional route without a token: `X-Auth-Guest: true`.
    case guest
    case verified(VerifiedIdentity)
}

/// A decision made on a request, as the request core takes it (`ExchangeStateMachine.decided`): the gatekeeper's, or a
/// test's.
package enum GateVerdict: Sendable {
    case admit(Admission)
    case reject(AuthFailure)
}
