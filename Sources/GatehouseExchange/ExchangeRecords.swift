package import GatehouseTokens
package import GatehouseTelemetry
import GatehouseAuth

/// What the core saw during one event, for its driver to count and log (`ProxyServices.record`): the core writes
/// no metric and no log line itself. Fixed fields, so recording allocates nothing: one event sets each at most once.
package struct ExchangeRecords {
    /// A request's outcome by its route's `auth` (`gatehouse_requests_total`); a refusal's is counted with it.
    package var outcome: (routeAuth: String, outcome: GatehouseMetrics.RequestOutcome)?
    /// From the request's head to its decision (`gatehouse_auth_duration_seconds`), for a route that is not public.
    package var authNanoseconds: Int64?
    /// From the request's head to the end of the upstream's response (`gatehouse_upstream_request_duration_seconds`).
    package var upstreamNanoseconds: Int64?
    /// A refusal: one failure-log line, counted by reason and as the request's outcome.
    package var rejection: Rejection?

    package struct Rejection {
        package let failure: AuthFailure
        package let request: UpstreamRequestHead.Request
        package let routeAuth: String
        package let token: Substring?
    }

    package var isEmpty: Bool { outcome == nil && authNanoseconds == nil && upstreamNanoseconds == nil && rejection == nil }
}
