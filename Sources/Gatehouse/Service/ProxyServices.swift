import Logging
import NIOCore
import GatehouseTelemetry
import GatehouseAuth
import GatehouseExchange

/// Everything a client connection needs, shared read-only by all of them. A class: each request
/// takes it with one retain instead of copying (and retaining) every member.
final class ProxyServices: Sendable {
    /// What the request core reads of this configuration (routes, timeouts, the head sent upstream and its identity
    /// headers' rules: `exchange.upstreamHead`).
    let exchange: ExchangeSettings
    let gatekeeper: Gatekeeper
    /// What an allowed Check changes in the request: `exchange.upstreamHead`'s rules, with `[ext_authz] forward_token`.
    let checkHead: UpstreamRequestHead
    let failureLog: FailureLog
    /// Sign-outs: applied here, written to the store, shared with the other replicas.
    let revocations: RevocationService
    /// Refresh tokens a sign-out carries are revoked at the provider too.
    let tokenRevoker: ProviderTokenRevoker
    let metrics: GatehouseMetrics
    let logger: Logger
    /// `[tracing]`: starts each request's trace; nil when tracing is off.
    let tracer: Tracer?
    /// Upstream answers that are not HTTP/1.x come with every request while the upstream is wrong.
    private let upstreamProtocolErrors = RateLimitedReport()

    init(
        exchange: ExchangeSettings, gatekeeper: Gatekeeper, checkHead: UpstreamRequestHead,
        failureLog: FailureLog, revocations: RevocationService, tokenRevoker: ProviderTokenRevoker, metrics: GatehouseMetrics, logger: Logger,
        tracer: Tracer? = nil
    ) {
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
