package import Foundation
package import NIOCore
import NIOHTTP1
package import GatehouseTokens
package import GatehouseAuth
package import GatehouseExchange
import GatehousePolicy

/// The calls the core's decision actions ask a driver to make (`ExchangeStateMachine.Action.decide`, `.signOut`, `.logOut`),
/// made with the services of the configuration the request started with. What they come to goes back to the core as
/// plain values (`decided(_:generation:now:wallClock:)`, `answered(_:generation:)`): the core sees no future.
extension ProxyServices {
    /// Asks the gatekeeper. A sign-out may be repeated with a signed-out token (a retry after a 503); signing out
    /// everywhere again would move the subject's cut-off, so a revoked token may not.
    package func decide(_ request: ExchangeRequest, recent: VerifiedIdentity?, now: Date, on eventLoop: any EventLoop) -> Gatekeeper.Decision {
        gatekeeper.decide(
            request.head, path: request.request.target.path, host: request.routingHost, rule: request.rule, token: request.token,
            evidence: request.evidence, now: Int64(now.timeIntervalSince1970), acceptingRevoked: request.endpoint == .signout,
            recent: recent, resource: request.resource, mcp: request.mcp, on: eventLoop)
    }

    /// Applies a sign-out with the body read (`SignOutResponder`): its answer once the store and the provider answered.
    package func signOut(
        _ endpoint: OwnEndpoint, _ identity: VerifiedIdentity, _ request: ExchangeRequest, body: [UInt8], on eventLoop: any EventLoop
    ) -> EventLoopFuture<LocalResponse> {
        SignOutResponder(services: self).respond(
            endpoint, identity, token: request.presentedToken, body: body, contentType: request.head.headers.first(name: "content-type"),
            on: eventLoop)
    }

    /// Judges and applies a back-channel logout with the body read (`BackchannelLogoutResponder`).
    package func backchannelLogout(
        provider: String, _ request: ExchangeRequest, body: [UInt8], on eventLoop: any EventLoop
    ) -> EventLoopFuture<LogoutOutcome> {
        BackchannelLogoutResponder(services: self).respond(
            provider: provider, body: body, contentType: request.head.headers.first(name: "content-type"), on: eventLoop)
    }
}
