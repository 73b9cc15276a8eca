/// What a request came to: the `outcome` values of `gatehouse_requests_total` (docs/reference.md §9), given by the
/// request core and counted by telemetry.
package enum RequestOutcome: String, CaseIterable, Sendable {
    case forwarded, unauthorized, forbidden, unavailable
    case badRequest = "bad_request"
    case upstreamError = "upstream_error"
    case endpoint
}
