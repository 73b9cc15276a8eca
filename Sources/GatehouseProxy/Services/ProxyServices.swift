package import Logging
import NIOCore
package import GatehouseVocabulary
package import GatehouseTelemetry
package import GatehouseAuth
package import GatehouseExchange

/// Everything a client connection needs, shared read-only by all of them. A class: each request
/// takes it with one retain instead of copying (and retaining) every member.
package final class ProxyServices: Sendable {
    /// What the request core reads of this configuration (routes, timeouts, the head sent upstream and its identity
    /// headers' rules: `exchange.upstreamHead`).
    package let exchange: ExchangeSettings
    package let gatekeeper: Gatekeeper
    /// What an allowed Check changes in the request: `exchange.upstreamHead`'s rules, with `[ext_authz] forward_token`.
    package let checkHead: UpstreamRequestHead
    package let failureLog: FailureLog
    /// Sign-outs: applied here, written to the store, shared with the other replicas.
    package let revocations: RevocationService
    /// Refresh tokens a sign-out carries are revoked at the provider too.
    package let tokenRevoker: ProviderTokenRevoker
    package let metrics: GatehouseMetrics
    package let logger: Logger
    /// `[tracing]`: starts each request's trace; nil when tracing is off.
    package let tracer: Tracer?
    /// Upstream answers that are not HTTP/1.x come with every request while the upstream is wrong.
    private let upstreamProtocolErrors = RateLimitedReport()
    /// Back-channel logouts taken per provider per second (`BackchannelLogoutResponder`).
    let logoutBudget = LogoutBudget()
    /// The time of day decisions are made at, identity headers stamped with and assertions signed at.
    package let wallClock: WallClock

    package init(
        exchange: ExchangeSettings, gatekeeper: Gatekeeper, checkHead: UpstreamRequestHead,
        failureLog: FailureLog, revocations: RevocationService, tokenRevoker: ProviderTokenRevoker, metrics: GatehouseMetrics, logger: Logger,
        tracer: Tracer? = nil, wallClock: WallClock = .system
    ) {
        self.wallClock = wallClock
        self.exchange = exchange
        self.gatekeeper = gatekeeper
        self.checkHead = checkHead
        self.failureLog = failureLog
        self.revocations = revocations
        self.tokenRevoker = tokenRevoker
        self.metrics = metrics
        self.logger = logger
        self.tracer = tracer
    }

    /// An upstream answer that was not HTTP/1.x, or broke its framing: the operator learns why the
    /// client got 502 (with what to change, for an HTTP/2 upstream behind `protocol = "http1"`), at most
    /// once per 10 s.
    func logUpstreamProtocolError(_ connection: UpstreamConnection) {
        guard let error = connection.protocolError else { return }
        upstreamProtocolErrors.occurred("upstream response refused", metadata: ["gatehouse.error": "\(error)"], to: logger)
    }
}
