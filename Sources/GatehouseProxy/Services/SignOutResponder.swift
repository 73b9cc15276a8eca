import Logging
import NIOCore
import NIOHTTP1
import GatehouseSyntax
import GatehouseTokens
import GatehouseTelemetry
import GatehouseAuth
import GatehouseExchange

/// The answer to `POST /.gatehouse/signout` and `/signout-everywhere` for a verified token, whichever
/// protocol the client speaks: the revocation is applied here at once, then the answer waits for the
/// store and, when the body carries a refresh token, for the provider (a 503 when either could not
/// be reached; a retry is idempotent).
struct SignOutResponder {
    let services: ProxyServices

    func respond(
        _ endpoint: OwnEndpoint, _ identity: VerifiedIdentity, token: Substring?, body: [UInt8], contentType: String?,
        on eventLoop: any EventLoop
    ) -> EventLoopFuture<LocalResponse> {
        let request: SignOutRequest
        do {
            request = try SignOutRequest(body: body, contentType: contentType)
        } catch {
            return eventLoop.makeSucceededFuture(Self.invalidRequest(error.detail))
        }
        let revocation: Revocation
        if endpoint == .signoutEverywhere {
            guard let subjectRevocation = RevocationList.subjectRevocation(identity, now: RevocationService.now()) else {
                return eventLoop.makeSucceededFuture(Self.invalidRequest("the token has no sub"))
            }
            revocation = subjectRevocation
        } else {
            guard let token else {  // verified implies presented; answered all the same
                return eventLoop.makeSucceededFuture(Self.invalidRequest("no token to sign out"))
            }
            revocation = RevocationList.tokenRevocation(identity, token: token)
        }
        let stored = TraceScope.span("gatehouse.revocation.store", around: services.revocations.revoke(revocation, on: eventLoop))
        let revokedAtProvider = request.refreshToken.map {
            TraceScope.span("gatehouse.revocation.provider", attributes: [("gatehouse.provider", .string(identity.providerName))],
                            around: services.tokenRevoker.revoke(refreshToken: $0, identity: identity, on: eventLoop))
        } ?? eventLoop.makeSucceededVoidFuture()
        return EventLoopFuture.whenAllComplete([stored, revokedAtProvider], on: eventLoop).map { results in
            self.response(endpoint, identity, store: results[0], provider: results[1])
        }
    }

    private func response(
        _ endpoint: OwnEndpoint, _ identity: VerifiedIdentity, store: Result<Void, any Error>, provider: Result<Void, any Error>
    ) -> LocalResponse {
        if case .failure(let error) = provider {
            services.logger.warning("sign-out: the provider did not revoke the refresh token", metadata: [
                "gatehouse.provider": "\(identity.providerName)", "gatehouse.error": "\(error)",
            ])
            return unavailable("Authentication service temporarily unavailable, cannot sign out. Please try again.")
        }
        if case .failure = store {
            return unavailable(
                "Signed out on this server only: the revocation store is unavailable, so other servers may still accept the token. Please try again.")
        }
        return LocalResponse.json(.ok, endpoint == .signoutEverywhere ? "{\"signed_out\":true,\"everywhere\":true}" : "{\"signed_out\":true}")
    }

    private func unavailable(_ message: String) -> LocalResponse {
        var response = LocalResponse.json(
            .serviceUnavailable, "{\"error\":\"temporarily_unavailable\",\"message\":\(message.jsonQuoted)}")
        response.headers.add(name: "Retry-After", value: String(ExchangeSettings.retryAfterSeconds))
        return response
    }

    static func invalidRequest(_ detail: String) -> LocalResponse {
        LocalResponse.json(.badRequest, "{\"error\":\"invalid_request\",\"error_description\":\(detail.jsonQuoted)}")
    }
}
