import Foundation
import NIOCore
import NIOHTTP1

/// `/.gatehouse/*`: judged by the same gatekeeper as proxied requests (same answers, same failure
/// log), then answered here instead of forwarded.
extension ClientConnectionHandler {
    func startEndpoint(
        _ path: String, head: HTTPRequestHead, requestID: String, token: BearerToken, context: ChannelHandlerContext
    ) {
        // The endpoint's own path (never its query) is what the failure log records.
        let request = UpstreamRequestHead.Request(
            head: head, target: NormalizedTarget(path: path, query: nil), requestID: requestID, clientIP: clientIP,
            scheme: services.scheme, isWebSocket: false)
        let plain = Exchange(request: request, rule: RouteRule.defaultRule, token: token.presentedToken, startedAt: .now())
        guard let endpoint = OwnEndpoint(path: path) else {
            services.metrics.request(routeAuth: "none", outcome: .endpoint)
            answer(plain, LocalResponse.json(.notFound, "{\"error\":\"not_found\"}"), context: context)
            return
        }
        guard endpoint.allows(head.method) else {
            services.metrics.request(routeAuth: "none", outcome: .endpoint)
            var response = LocalResponse.json(.methodNotAllowed, "{\"error\":\"method_not_allowed\"}")
            response.headers.add(name: "Allow", value: endpoint.allowHeader)
            answer(plain, response, context: context)
            return
        }
        var judged = request
        var rule = RouteRule.defaultRule
        if endpoint == .check {
            guard let described = OwnEndpoint.describedRequest(head) else {
                services.metrics.request(routeAuth: "none", outcome: .badRequest)
                answer(plain, LocalResponse.json(.badRequest, "{\"error\":\"invalid_request\"}"), context: context)
                return
            }
            (judged.head, judged.target) = described
            rule = services.routes.match(method: described.head.method.rawValue, path: described.target.path)
        }
        let exchange = Exchange(request: judged, rule: rule, token: token.presentedToken, startedAt: .now())
        exchange.endpoint = endpoint
        exchange.isHEAD = head.method == .HEAD
        let now = Int64(Date().timeIntervalSince1970)
        // Signing out a signed-out token again is harmless (a retry after a 503); signing out
        // everywhere again would move the subject's cut-off, so a revoked token may not.
        decided(services.gatekeeper.decide(
                    judged.head, path: judged.target.path, rule: rule, token: token, now: now, acceptingRevoked: endpoint == .signout,
                    on: context.eventLoop),
                exchange, context: context)
    }

    /// The request passed: answer it here.
    /// Rejections are counted (and logged) like any other; answered ones count as `endpoint`.
    func answerEndpoint(_ endpoint: OwnEndpoint, _ admission: Gatekeeper.Admission, _ exchange: Exchange, context: ChannelHandlerContext) {
        services.metrics.request(routeAuth: "none", outcome: .endpoint)
        switch (endpoint, admission) {
        case (.check, _):
            var response = LocalResponse.json(.ok, "{\"allowed\":true}")
            services.upstreamHead.addIdentityHeaders(for: admission, to: &response.headers)
            answer(exchange, response, context: context)
        case (.userinfo, .verified(let identity)):
            answer(exchange, LocalResponse.json(.ok, Self.userinfoJSON(identity)), context: context)
        case (.signout, .verified(let identity)), (.signoutEverywhere, .verified(let identity)):
            startSignOut(endpoint, identity, exchange, context: context)
        case (.userinfo, _), (.signout, _), (.signoutEverywhere, _):
            // Their rule is `required`: only a verified identity gets here.
            answer(exchange, LocalResponse.json(.unauthorized, "{\"error\":\"invalid_token\"}"), context: context)
        }
    }

    /// `{"provider","sub","email","name","picture","claims":{…}}`
    static func userinfoJSON(_ identity: VerifiedIdentity) -> String {
        let claims = identity.claims
        return JSONValue.object([
            "provider": .string(identity.providerName),
            "sub": claims["sub"] ?? .null,
            "email": claims["email"] ?? .null,
            "name": claims["name"] ?? .null,
            "picture": claims["picture"] ?? .null,
            "claims": .object(claims),
        ]).compactJSON
    }
}
