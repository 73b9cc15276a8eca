import GatehouseTokens
import GatehouseTelemetry
import GatehouseAuth

/// What the core saw during one event, for its driver to count and log (`ProxyServices.record`): the core writes
/// no metric and no log line itself. Fixed fields, so recording allocates nothing: one event sets each at most once.
struct ExchangeRecords {
    /// A request's outcome by its route's `auth` (`gatehouse_requests_total`); a refusal's is counted with it.
    var outcome: (routeAuth: String, outcome: GatehouseMetrics.RequestOutcome)?
    /// From the request's head to its decision (`gatehouse_auth_duration_seconds`), for a route that is not public.
    var authNanoseconds: Int64?
    /// From the request's head to the end of the upstream's response (`gatehouse_upstream_request_duration_seconds`).
    var upstreamNanoseconds: Int64?
    /// A refusal: one failure-log line, counted by reason and as the request's outcome.
    var rejection: Rejection?

    struct Rejection {
        let failure: AuthFailure
        let request: UpstreamRequestHead.Request
        let routeAuth: String
        let token: Substring?
    }

    var isEmpty: Bool { outcome == nil && authNanoseconds == nil && upstreamNanoseconds == nil && rejection == nil }
}
