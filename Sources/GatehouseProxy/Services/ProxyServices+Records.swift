import Foundation
package import NIOCore
import NIOHTTP1
import GatehouseSyntax
import Prometheus
import GatehouseTokens
import GatehouseTelemetry
import GatehouseAuth
package import GatehouseExchange
import GatehouseVocabulary
import GatehousePolicy

extension ProxyServices {
    /// What every refused request leaves behind, whichever protocol it came by: one failure-log
    /// line, the failure counter, and the request counter with its outcome.
    func recordRejection(
        _ failure: AuthFailure, of request: UpstreamRequestHead.Request, routeAuth: String, token: Substring?, mcp: MCPMessage? = nil
    ) {
        var event = FailureEvent(
            timestamp: Date(), status: Int(failure.status.code), failure: failure, requestID: request.requestID,
            clientIP: request.clientIP, method: request.head.method.rawValue, path: request.target.path,
            userAgent: request.head.headers.first(name: "user-agent"),
            token: token, via: request.via)
        if let mcp, !mcp.method.isEmpty {
            event.mcpMethod = mcp.method
            if !mcp.name.isEmpty { event.mcpName = mcp.name }
        }
        failureLog.record(event)
        metrics.authFailure(reason: failure.reason, provider: failure.provider)
        let outcome: RequestOutcome = switch failure.status {
        case .forbidden, .notFound: .forbidden
        case .badRequest: .badRequest
        case .serviceUnavailable: .unavailable
        default: .unauthorized
        }
        metrics.request(routeAuth: routeAuth, outcome: outcome)
    }
}

extension ProxyServices {
    /// A session binding made, moved on or ended, in the revocation store (shared by the replicas). A binding still
    /// good for more than half its time is not written again: one write per session per half `session_ttl`, not per
    /// request. An id bound to another owner stays theirs.
    private func keep(_ session: ExchangeRecords.SessionChange, on eventLoop: any EventLoop) {
        let now = RevocationService.now()
        switch session {
        case .bind(let id, let owner, let ttlSeconds):
            if let bound = revocations.list.session(id, now: now) {
                guard bound.owner == owner, bound.expiresAt - now < ttlSeconds / 2 else { return }
            }
            _ = revocations.revoke(.session(id: id, owner: owner, expiresAt: now + ttlSeconds), on: eventLoop)
        case .end(let id, let owner):
            guard revocations.list.session(id, now: now)?.owner == owner else { return }
            _ = revocations.revoke(.sessionEnded(id: id, owner: owner), on: eventLoop)
        }
    }
}

extension ProxyServices {
    /// Counts and logs what the core recorded, and keeps the MCP session it bound or ended.
    package func record(_ records: ExchangeRecords, on eventLoop: any EventLoop) {
        if let session = records.session { keep(session, on: eventLoop) }
        if let nanoseconds = records.authNanoseconds { metrics.authDuration.recordNanoseconds(nanoseconds) }
        if let rejection = records.rejection {
            recordRejection(rejection.failure, of: rejection.request, routeAuth: rejection.routeAuth, token: rejection.token, mcp: rejection.mcp)
        }
        if let nanoseconds = records.upstreamNanoseconds { metrics.upstreamDuration.recordNanoseconds(nanoseconds) }
        if let (routeAuth, outcome) = records.outcome { metrics.request(routeAuth: routeAuth, outcome: outcome) }
    }
}
