import NIOCore
import NIOHTTP1

/// Decides one request: route -> token -> verification -> the route's requirements.
struct Gatekeeper: Sendable {
    /// Who the request is forwarded as.
    enum Admission {
        /// A public route, or a CORS preflight let through by configuration: no identity headers.
        case anonymous
        /// An optional route without a token: `X-Auth-Guest: true`.
        case guest
        case verified(VerifiedIdentity)
    }

    enum Decision {
        case admit(Admission)
        case reject(AuthFailure)
        case pending(EventLoopFuture<Decision>)
    }

    let routes: RouteTable
    let verifier: TokenVerifier
    let verification: VerificationSettings
    /// Cognito userinfo enrichment, for the providers that asked for it.
    let userinfo: UserinfoEnricher?
    /// Signed-out tokens and subjects.
    let revocations: RevocationList

    func decide(
        _ head: HTTPRequestHead,
        path: String,
        rule: RouteRule,
        token: BearerToken,
        now: Int64,
        acceptingRevoked: Bool = false,
        recent: VerifiedIdentity? = nil,
        on eventLoop: any EventLoop
    ) -> Decision {
        if rule.auth == .public || isAllowedPreflight(head) { return .admit(.anonymous) }
        let presented: Substring
        switch token {
        case .absent:
            return rule.auth == .optional ? .admit(.guest) : .reject(AuthFailure(.missingToken, "no bearer token"))
        case .malformed(let detail):
            return .reject(AuthFailure(.malformedToken, detail))
        case .present(let value):
            presented = value
        }
        switch verifier.verify(presented, allowedProviders: rule.providers, now: now, recent: recent, on: eventLoop) {
        case .done(let result):
            return enriched(result, token: presented, rule: rule, now: now, acceptingRevoked: acceptingRevoked, on: eventLoop)
        case .pending(let future):
            return .pending(future.flatMap { result in
                switch enriched(result, token: presented, rule: rule, now: now, acceptingRevoked: acceptingRevoked, on: eventLoop) {
                case .pending(let next): return next
                case let decision: return eventLoop.makeSucceededFuture(decision)
                }
            })
        }
    }

    /// Userinfo attributes (when configured) join the claims before the route's requirements see them.
    /// `acceptingRevoked`: a sign-out may present an already signed-out token (its retry after a 503 is idempotent).
    private func enriched(
        _ result: Result<VerifiedIdentity, AuthFailure>, token: Substring, rule: RouteRule, now: Int64, acceptingRevoked: Bool,
        on eventLoop: any EventLoop
    ) -> Decision {
        guard case .success(let identity) = result else { return Self.apply(rule, to: result) }
        if !acceptingRevoked, revocations.isRevoked(identity, token: token) {
            return .reject(Self.authentic(AuthFailure(.revoked, "token was signed out"), identity))
        }
        guard let userinfo else { return Self.apply(rule, to: result) }
        switch userinfo.enrich(identity, token: token, now: now, on: eventLoop) {
        case .done(let enrichedIdentity):
            return Self.apply(rule, to: .success(enrichedIdentity))
        case .pending(let future):
            return .pending(future.map { Self.apply(rule, to: .success($0)) })
        }
    }

    private static func apply(_ rule: RouteRule, to result: Result<VerifiedIdentity, AuthFailure>) -> Decision {
        switch result {
        case .failure(let failure):
            return .reject(failure)
        case .success(let identity):
            guard let failure = rule.checkRequirements(claims: identity.claims) else { return .admit(.verified(identity)) }
            return .reject(authentic(failure, identity))
        }
    }

    /// A failure of a token whose signature verified: the log may name its subject.
    private static func authentic(_ failure: AuthFailure, _ identity: VerifiedIdentity) -> AuthFailure {
        var failure = failure
        failure.provider = identity.providerName
        failure.issuer = identity.claims["iss"]?.stringValue
        failure.keyID = identity.keyID
        failure.subject = identity.subject
        return failure
    }

    /// `bypass_cors_preflight`: OPTIONS with `Origin` and `Access-Control-Request-Method`.
    private func isAllowedPreflight(_ head: HTTPRequestHead) -> Bool {
        verification.bypassCORSPreflight && head.method == .OPTIONS
            && head.headers.contains(name: "origin") && head.headers.contains(name: "access-control-request-method")
    }
}

extension AuthFailure {
    /// The HTTP status this failure is answered with (docs/reference.md §4).
    var status: HTTPResponseStatus {
        switch reason {
        case .insufficientScope, .forbidden: .forbidden
        case .keysUnavailable: .serviceUnavailable
        default: .unauthorized
        }
    }
}
