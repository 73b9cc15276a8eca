import Logging
import NIOCore

/// Everything a client connection needs, shared read-only by all of them.
struct ProxyServices: Sendable {
    let gatekeeper: Gatekeeper
    let routes: RouteTable
    let upstreamHead: UpstreamRequestHead
    let failureLog: FailureLog
    let revocations: RevocationList
    let metrics: GatehouseMetrics
    let responseTimeout: TimeAmount
    let verification: VerificationSettings
    let scheme: String
    /// Seconds a client is told to wait after a 503.
    let retryAfterSeconds: Int
    let logger: Logger
}
