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
        state = .deciding(exchange)
        let responder = SignOutResponder(services: services)
        let answered = responder.respond(
            endpoint, identity, token: exchange.token, body: body, contentType: exchange.head.headers.first(name: "content-type"),
            on: context.eventLoop)
        answered.assumeIsolated().whenSuccess { response in
            guard case .deciding(let current) = self.state, current === exchange, let context = self.context else { return }
            self.answer(exchange, response, context: context)
        }
    }
}
