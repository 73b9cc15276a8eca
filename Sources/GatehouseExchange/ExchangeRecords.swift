package import GatehouseSyntax
import GatehouseTokens
package import GatehouseVocabulary

/// What the core saw during one event, for its driver to count and log (`ProxyServices.record`): the core writes
/// no metric and no log line itself. Fixed fields, so recording allocates nothing: one event sets each at most once.
package struct ExchangeRecords {
    /// A request's outcome by its route's `auth` (`gatehouse_requests_total`); a refusal's is counted with it.
    package var outcome: (routeAuth: String, outcome: RequestOutcome)?
    /// From the request's head to its decision (`gatehouse_auth_duration_seconds`), for a route that is not public.
    package var authNanoseconds: Int64?
    /// From the request's head to the end of the upstream's response (`gatehouse_upstream_request_duration_seconds`).
    package var upstreamNanoseconds: Int64?
    /// A refusal: one failure-log line, counted by reason and as the request's outcome.
    package var rejection: Rejection? {
        get { rejectionBox?.rejection }
        set { rejectionBox = newValue.map(RejectionBox.init) }
    }
    /// Held out of line: a refusal is rare and large (its request's fields, ~260 bytes), and the records are taken
    /// after every event of every request: inline, each take moved ~370 bytes (memmove, ~1 % of a forward's CPU).
    private var rejectionBox: RejectionBox?
    /// An MCP session the upstream made, used or ended for a verified identity (docs/reference.md §17.4).
    package var session: SessionChange?

    package enum SessionChange: Equatable {
        /// The id is the owner's (made or used now): kept `ttlSeconds` from now.
        case bind(id: String, owner: String, ttlSeconds: Int64)
        /// The owner ended it (a `DELETE` the upstream accepted).
        case end(id: String, owner: String)
    }

    package struct Rejection {
        package let failure: AuthFailure
        package let request: UpstreamRequestHead.Request
        package let routeAuth: String
        package let token: Substring?
        /// The MCP message of the refused request, when it had one (its method and tool go in the log line).
        package var mcp: MCPMessage? = nil
    }

    package var isEmpty: Bool { outcome == nil && authNanoseconds == nil && upstreamNanoseconds == nil && rejectionBox == nil && session == nil }
}

/// A refusal's record, shared rather than copied with the records that carry it.
private final class RejectionBox {
    let rejection: ExchangeRecords.Rejection

    init(_ rejection: ExchangeRecords.Rejection) {
        self.rejection = rejection
    }
}
