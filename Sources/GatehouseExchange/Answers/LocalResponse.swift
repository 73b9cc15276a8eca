package import NIOHTTP1
import GatehouseSyntax
import GatehouseTokens
package import GatehouseVocabulary

/// An answer Gatehouse gives itself (401/403/503, 400, 502/504, its own endpoints), whatever
/// protocol the client speaks.
package struct LocalResponse {
    package var status: HTTPResponseStatus
    package var headers: HTTPHeaders
    package var body: String
    /// Close after answering even if the client could keep the connection (malformed requests).
    package var closeConnection = false
    /// What a gRPC client is told in `grpc-message` (a refusal's reason and its words).
    package var grpcMessage: String?

    package static func plain(_ status: HTTPResponseStatus, _ text: String) -> Self {
        Self(status: status, headers: ["Content-Type": "text/plain; charset=utf-8"], body: text + "\n")
    }

    package static func json(_ status: HTTPResponseStatus, _ body: String) -> Self {
        Self(status: status, headers: ["Content-Type": "application/json"], body: body)
    }

    /// 400 (or 431) for a request head the doors refuse, saying which rule it broke.
    package static func malformedRequest(_ reason: String, status: HTTPResponseStatus = .badRequest) -> Self {
        plain(status, status == .badRequest ? "malformed request: \(reason)" : reason)
    }

    /// 401 / 403 / 503 for a failed authentication (`AuthErrorResponse`).
    package static func refusal(
        _ failure: AuthFailure, requestID: String, retryAfterSeconds: Int, resource: AuthErrorResponse.ResourceChallenge? = nil
    ) -> Self {
        let (status, headers, body) = AuthErrorResponse.make(failure, requestID: requestID, retryAfterSeconds: retryAfterSeconds, resource: resource)
        return Self(status: status, headers: headers, body: body,
                    grpcMessage: "\(failure.reason.rawValue): \(failure.reason.message)")
    }

    /// 502 / 504: not an authentication failure, so nothing in the failure log.
    static func upstreamFailure(_ status: HTTPResponseStatus, requestID: String) -> Self {
        let message = status == .gatewayTimeout ? "upstream_timeout" : "upstream_unavailable"
        return json(status, "{\"error\":\"\(message)\",\"request_id\":\(requestID.jsonQuoted)}")
    }
}
