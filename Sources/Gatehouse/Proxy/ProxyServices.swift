import Logging
import NIOCore

/// Everything a client connection needs, shared read-only by all of them.
struct ProxyServices: Sendable {
    let gatekeeper: Gatekeeper
    let routes: RouteTable
    let upstreamHead: UpstreamRequestHead
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
}
