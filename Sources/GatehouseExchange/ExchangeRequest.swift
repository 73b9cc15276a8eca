import Foundation
package import NIOCore
package import NIOHTTP1
import GatehouseConfig
package import GatehouseSyntax
package import GatehouseTokens
package import GatehousePolicy
package import GatehouseVocabulary

/// A request as the core holds it from its head on, whichever door it came by: what is judged
/// (for `/.gatehouse/check`, the request the fronting proxy describes), by which rule, with which
/// token, and how its answer is framed on the wire. A class: the core, its actions and the door's
/// upstream leg pass it along on every request, one retain instead of a copy of each member; it is
/// set at intake and lives on the connection's event loop. It is the request forwarded too (its superclass: one
/// object per request).
package final class ExchangeRequest: UpstreamRequestHead.Request {
    /// The request judged and forwarded (its target normalized, its id accepted or generated): this object, as the
    /// upstream head's writer reads it.
    package var request: UpstreamRequestHead.Request { self }
    package var rule: RouteRule
    /// `/.gatehouse/*`: answered here once admitted, never forwarded.
    package var endpoint: OwnEndpoint?
    package let token: BearerToken
    /// The token's scheme, DPoP proof and client certificate (sender-constrained tokens).
    package let evidence: SenderEvidence
    /// The method on the wire is HEAD: its answer has no body (for `/.gatehouse/check`, `request`
    /// carries the described method, not this one).
    package var isHEAD: Bool
    /// A gRPC call over HTTP/2: refused in gRPC's form (an HTTP/1.1 client gets the plain answer).
    package var isGRPC: Bool
    /// The configuration this request started with; a reload applies to the next request.
    package let settings: ExchangeSettings
    package let startedAt: NIODeadline
    /// Who the request was forwarded as, once admitted: a retry goes as the same.
    var admission: Admission?
    /// The client presented the same token as its connection's last verified request.
    package var presentsRecentToken = false
    /// The host routes matched (Host, `:authority`, the decision endpoint's `X-Forwarded-Host`), which a `when` rule
    /// reads; looked up only when a route names hosts or the matched route has a rule.
    package var routingHost: String?
    /// The `[[resource]]` the request is under (its host and path): audience binding, the challenge's
    /// `resource_metadata`, and for an MCP server the message, origin and session rules.
    package var resource: ProtectedResource?
    /// An MCP server's POST: its JSON-RPC message, read before the decision (its routes and rules see it); nil for a
    /// request that has none (docs/reference.md §17.3).
    package var mcp: MCPMessage?

    package init(
        head: HTTPRequestHead, target: NormalizedTarget, requestID: String, clientIP: String, scheme: String, isWebSocket: Bool = false,
        via: String? = nil, trace: TracePropagation? = nil, rule: RouteRule, endpoint: OwnEndpoint?, token: BearerToken,
        evidence: SenderEvidence = .none, isHEAD: Bool, isGRPC: Bool, settings: ExchangeSettings, startedAt: NIODeadline,
        hasConnectionField: Bool = true
    ) {
        self.evidence = evidence
        self.rule = rule
        self.endpoint = endpoint
        self.token = token
        self.isHEAD = isHEAD
        self.isGRPC = isGRPC
        self.settings = settings
        self.startedAt = startedAt
        super.init(
            head: head, target: target, requestID: requestID, clientIP: clientIP, scheme: scheme, isWebSocket: isWebSocket, via: via,
            trace: trace, hasConnectionField: hasConnectionField)
    }

    var routeAuth: String { rule.auth.rawValue }
    package var presentedToken: Substring? { token.presentedToken }
    /// Under an MCP server's `[[resource]]`: the answer binds or ends the caller's session (docs/reference.md §17.4).
    package var bindsSessions: Bool { resource?.settings.mcp == true }
}

extension BearerToken {
    package var presentedToken: Substring? {
        if case .present(let token) = self { return token }
        return nil
    }
}
