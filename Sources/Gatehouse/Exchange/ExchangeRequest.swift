import Foundation
import NIOCore
import NIOHTTP1
import GatehouseConfig
import GatehouseTokens
import GatehouseAuth

/// A request as the core holds it from its head on, whichever door it came by: what is judged
/// (for `/.gatehouse/check`, the request the fronting proxy describes), by which rule, with which
/// token, and how its answer is framed on the wire. A class: the core, its actions and the door's
/// upstream leg pass it along on every request, one retain instead of a copy of each member; it is
/// set at intake and lives on the connection's event loop.
final class ExchangeRequest {
    /// The request judged and forwarded (its target normalized, its id accepted or generated).
    var request: UpstreamRequestHead.Request
    var rule: RouteRule
    /// `/.gatehouse/*`: answered here once admitted, never forwarded.
    var endpoint: OwnEndpoint?
    var token: BearerToken
    /// The token's scheme, DPoP proof and client certificate (sender-constrained tokens).
    let evidence: SenderEvidence
    /// The method on the wire is HEAD: its answer has no body (for `/.gatehouse/check`, `request`
    /// carries the described method, not this one).
    var isHEAD: Bool
    /// A gRPC call over HTTP/2: refused in gRPC's form (an HTTP/1.1 client gets the plain answer).
    var isGRPC: Bool
    /// The configuration this request started with; a reload applies to the next request.
    let settings: ExchangeSettings
    let startedAt: NIODeadline
    /// Who the request was forwarded as, once admitted: a retry goes as the same.
    var admission: Gatekeeper.Admission?
    /// The client presented the same token as its connection's last verified request.
    var presentsRecentToken = false
    /// The host routes matched (Host, `:authority`, the decision endpoint's `X-Forwarded-Host`), which a `when` rule
    /// reads; looked up only when a route names hosts or the matched route has a rule.
    var routingHost: String?

    init(
        request: UpstreamRequestHead.Request, rule: RouteRule, endpoint: OwnEndpoint?, token: BearerToken, evidence: SenderEvidence = .none,
        isHEAD: Bool, isGRPC: Bool, settings: ExchangeSettings, startedAt: NIODeadline
    ) {
        self.evidence = evidence
        self.request = request
        self.rule = rule
        self.endpoint = endpoint
        self.token = token
        self.isHEAD = isHEAD
        self.isGRPC = isGRPC
        self.settings = settings
        self.startedAt = startedAt
    }

    var head: HTTPRequestHead { request.head }
    var requestID: String { request.requestID }
    var routeAuth: String { rule.auth.rawValue }
    var presentedToken: Substring? { token.presentedToken }
}

extension BearerToken {
    var presentedToken: Substring? {
        if case .present(let token) = self { return token }
        return nil
    }
}
