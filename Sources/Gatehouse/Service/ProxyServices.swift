import Logging
import NIOCore

/// Everything a client connection needs, shared read-only by all of them. A class: each request
/// takes it with one retain instead of copying (and retaining) every member.
final class ProxyServices: Sendable {
    let gatekeeper: Gatekeeper
    let routes: RouteTable
    let upstreamHead: UpstreamRequestHead
    /// What an allowed Check changes in the request: `upstreamHead`'s rules, with `[ext_authz] forward_token`.
    let checkHead: UpstreamRequestHead
    let failureLog: FailureLog
    /// Sign-outs: applied here, written to the store, shared with the other replicas.
    let revocations: RevocationService
    /// Refresh tokens a sign-out carries are revoked at the provider too.
    let tokenRevoker: ProviderTokenRevoker
    let metrics: GatehouseMetrics
    let responseTimeout: TimeAmount
    /// `[listen] idle_timeout`: next request head, sign-out body, or the next bytes of a streamed body.
    let idleTimeout: TimeAmount
    let verification: VerificationSettings
    let scheme: String
    /// Seconds a client is told to wait after a 503.
    let retryAfterSeconds: Int
    let logger: Logger
    /// `[tracing]`: starts each request's trace; nil when tracing is off.
    let tracer: Tracer?
    /// What the request core reads of this configuration.
    let exchange: ExchangeSettings
    /// Upstream answers that are not HTTP/1.x come with every request while the upstream is wrong.
    private let upstreamProtocolErrors = RateLimitedReport()

    init(
        gatekeeper: Gatekeeper, routes: RouteTable, upstreamHead: UpstreamRequestHead, checkHead: UpstreamRequestHead, failureLog: FailureLog,
        revocations: RevocationService, tokenRevoker: ProviderTokenRevoker, metrics: GatehouseMetrics, responseTimeout: TimeAmount,
        idleTimeout: TimeAmount, verification: VerificationSettings, scheme: String, retryAfterSeconds: Int, logger: Logger,
        tracer: Tracer? = nil
    ) {
        self.gatekeeper = gatekeeper
        self.routes = routes
        self.upstreamHead = upstreamHead
        self.checkHead = checkHead
        self.failureLog = failureLog
        self.revocations = revocations
        self.tokenRevoker = tokenRevoker
        self.metrics = metrics
        self.responseTimeout = responseTimeout
        self.idleTimeout = idleTimeout
        self.verification = verification
        self.scheme = scheme
        self.retryAfterSeconds = retryAfterSeconds
        self.logger = logger
        self.tracer = tracer
        self.exchange = ExchangeSettings(
            routes: routes, tokenCookie: verification.tokenCookie, tokenHeader: verification.tokenHeader, scheme: scheme,
            identityHeaders: upstreamHead, retryAfterSeconds: retryAfterSeconds, responseTimeout: responseTimeout, idleTimeout: idleTimeout,
            remembersTokens: gatekeeper.userinfo == nil)
    }

    /// An upstream answer that was not HTTP/1.x, or broke its framing: the operator learns why the
    /// client got 502 (with what to change, for an HTTP/2 upstream behind `protocol = "http1"`), at most
    /// once per 10 s.
    func logUpstreamProtocolError(_ connection: UpstreamConnection) {
        guard let error = connection.protocolError else { return }
        upstreamProtocolErrors.occurred("upstream response refused", metadata: ["gatehouse.error": "\(error)"], to: logger)
    }
}
