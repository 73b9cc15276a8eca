import Logging
import NIOCore
import NIOHTTP1

/// `POST /.gatehouse/signout` and `/signout-everywhere` for a verified token: read the body (it may
/// carry a refresh token), apply the revocation here at once, then answer when the store has it and
/// the provider has revoked the refresh token, or 503 when either could not be reached (a retry is idempotent).
extension ClientConnectionHandler {
    func startSignOut(_ endpoint: OwnEndpoint, _ identity: VerifiedIdentity, _ exchange: Exchange, context: ChannelHandlerContext) {
        if exchange.requestEnded {
            signOut(endpoint, identity, exchange, context: context)
        } else {
            state = .readingSignOut(endpoint, exchange, identity)
            // The body must arrive within the same time a request head must (slowloris).
            let deadline = NIODeadline.now() + services.idleTimeout
            headDeadline = deadline
            armWatchdog(for: deadline, context: context)
            context.read()
        }
    }

    func signOut(_ endpoint: OwnEndpoint, _ identity: VerifiedIdentity, _ exchange: Exchange, context: ChannelHandlerContext) {
        headDeadline = nil
        var body: [UInt8] = []
        for buffer in exchange.bufferedBody { body.append(contentsOf: buffer.readableBytesView) }
        let request: SignOutRequest
        do {
            request = try SignOutRequest(body: body, contentType: exchange.head.headers.first(name: "content-type"))
        } catch {
            answer(exchange, Self.invalidRequest(error.detail), context: context)
            return
        }
        let revocation: Revocation
        if endpoint == .signoutEverywhere {
            guard let subjectRevocation = RevocationList.subjectRevocation(identity, now: RevocationService.now()) else {
                answer(exchange, Self.invalidRequest("the token has no sub"), context: context)
                return
            }
            revocation = subjectRevocation
        } else {
            guard let token = exchange.token else {  // verified implies presented; answered all the same
                answer(exchange, Self.invalidRequest("no token to sign out"), context: context)
                return
            }
            revocation = RevocationList.tokenRevocation(identity, token: token)
        }
        state = .deciding(exchange)
        let eventLoop = context.eventLoop
        let stored = services.revocations.revoke(revocation, on: eventLoop)
        let revokedAtProvider = request.refreshToken.map {
            services.tokenRevoker.revoke(refreshToken: $0, identity: identity, on: eventLoop)
        } ?? eventLoop.makeSucceededVoidFuture()
        EventLoopFuture.whenAllComplete([stored, revokedAtProvider], on: eventLoop).assumeIsolated().whenSuccess { results in
            guard case .deciding(let current) = self.state, current === exchange, let context = self.context else { return }
            self.answer(exchange, self.signOutResponse(endpoint, identity, store: results[0], provider: results[1]), context: context)
        }
    }

    private func signOutResponse(
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
        response.headers.add(name: "Retry-After", value: String(services.retryAfterSeconds))
        return response
    }

    private static func invalidRequest(_ detail: String) -> LocalResponse {
        LocalResponse.json(.badRequest, "{\"error\":\"invalid_request\",\"error_description\":\(detail.jsonQuoted)}")
    }
}
