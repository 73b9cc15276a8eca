import Foundation
import NIOHTTP1
import Prometheus
package import GatehouseTokens
import GatehouseTelemetry
import GatehouseAuth
package import GatehouseExchange

extension ProxyServices {
    /// What every refused request leaves behind, whichever protocol it came by: one failure-log
    /// line, the failure counter, and the request counter with its outcome.
    package func recordRejection(_ failure: AuthFailure, of request: UpstreamRequestHead.Request, routeAuth: String, token: Substring?) {
        failureLog.record(FailureEvent(
            timestamp: Date(), status: Int(failure.status.code), failure: failure, requestID: request.requestID,
            clientIP: request.clientIP, method: request.head.method.rawValue, path: request.target.path,
            userAgent: request.head.headers.first(name: "user-agent"),
            token: token, via: request.via))
        metrics.authFailure(reason: failure.reason, provider: failure.provider)
        let outcome: GatehouseMetrics.RequestOutcome = switch failure.status {
        case .forbidden: .forbidden
        case .serviceUnavailable: .unavailable
        default: .unauthorized
        }
        metrics.request(routeAuth: routeAuth, outcome: outcome)
    }
}

extension ProxyServices {
    /// Counts and logs what the core recorded.
    package func record(_ records: ExchangeRecords) {
        if let nanoseconds = records.authNanoseconds { metrics.authDuration.recordNanoseconds(nanoseconds) }
        if let rejection = records.rejection {
            recordRejection(rejection.failure, of: rejection.request, routeAuth: rejection.routeAuth, token: rejection.token)
        }
        if let nanoseconds = records.upstreamNanoseconds { metrics.upstreamDuration.recordNanoseconds(nanoseconds) }
        if let (routeAuth, outcome) = records.outcome { metrics.request(routeAuth: routeAuth, outcome: outcome) }
    }
}
