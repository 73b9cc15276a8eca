package import NIOCore
package import NIOHTTP1
import GatehouseSyntax
package import GatehouseConfig
package import GatehouseTokens
import GatehouseTelemetry

/// Decides one request: route -> token -> verification -> the route's requirements.
package struct Gatekeeper: Sendable {
    /// Who the request is forwarded as.
    package enum Admission {
        /// A public route, or a CORS preflight let through by configuration: no identity headers.
        case anonymous
        /// An optional route without a token: `X-Auth-Guest: true`.
        case guest
        case verified(VerifiedIdentity)
    }

    /// What the gatekeeper answers: a verdict at once, or one still to come (a key refetch, introspection, userinfo,
    /// a shared replay store).
    package enum Decision {
        case admit(Admission)
        case reject(AuthFailure)
        case pending(EventLoopFuture<Decision>)

        /// The verdict of a decision made; nil while pending (its future completes with a made one).
        package var verdict: Verdict? {
            switch self {
            case .admit(let admission): .admit(admission)
            case .reject(let failure): .reject(failure)
            case .pending: nil
            }
        }
    }

    /// A decision made, as the request core takes it (`ExchangeStateMachine.decided`).
    package enum Verdict {
        case admit(Admission)
        case reject(AuthFailure)
    }

    package let routes: RouteTable
    package let verifier: TokenVerifier
    package let verification: VerificationSettings
    /// Cognito userinfo enrichment, for the providers that asked for it.
    package let userinfo: UserinfoEnricher?
    /// Signed-out tokens and subjects.
    package let revocations: RevocationList
    /// DPoP proofs and certificate bindings (RFC 9449, RFC 8705).
    package let senderConstraints: SenderConstraints
    /// Provider names by index (a missing token's challenge depends on the route's providers).
    package let providerNames: [String]

    package init(
        routes: RouteTable, verifier: TokenVerifier, verification: VerificationSettings, userinfo: UserinfoEnricher?,
        revocations: RevocationList, senderConstraints: SenderConstraints, providerNames: [String]
    ) {
        self.routes = routes
        self.verifier = verifier
        self.verification = verification
        self.userinfo = userinfo
        self.revocations = revocations
        self.senderConstraints = senderConstraints
        self.providerNames = providerNames
    }

    package func decide(
        _ head: HTTPRequestHead,
        path: String,
        host: String? = nil,
        rule: RouteRule,
        token: BearerToken,
        evidence: SenderEvidence = .none,
        now: Int64,
        acceptingRevoked: Bool = false,
        recent: VerifiedIdentity? = nil,
        on eventLoop: any EventLoop
    ) -> Decision {
        if rule.auth == .public || isAllowedPreflight(head) { return .admit(.anonymous) }
        let presented: Substring
        switch token {
        case .absent:
            guard rule.auth != .optional else { return .admit(.guest) }
            return challenged(.reject(AuthFailure(.missingToken, "no bearer token")), evidence: evidence, rule: rule, now: now)
        case .malformed(let detail):
            return challenged(.reject(AuthFailure(.malformedToken, detail)), evidence: evidence, rule: rule, now: now)
        case .present(let value):
            presented = value
        }
        let request = Judged(
            head: head, path: path, host: host, token: presented, evidence: evidence, rule: rule, now: now, acceptingRevoked: acceptingRevoked)
        let decision: Decision
        switch verifier.verify(presented, allowedProviders: rule.providers, now: now, recent: recent, on: eventLoop) {
        case .done(let result):
            decision = constrained(result, request, on: eventLoop)
        case .pending(let future):
            let trace = TraceScope.current  // the steps after the wait are this request's too
            decision = .pending(future.flatMap { result in
                switch TraceScope.with(trace, { constrained(result, request, on: eventLoop) }) {
                case .pending(let next): return next
                case let decision: return eventLoop.makeSucceededFuture(decision)
                }
            })
        }
        return challenged(decision, evidence: evidence, rule: rule, now: now)
    }

    /// What the steps after verification need of the request.
    private struct Judged {
        let head: HTTPRequestHead
        /// The normalized path and the host the route was matched by (a `when` rule reads them).
        let path: String
        let host: String?
        let token: Substring
        let evidence: SenderEvidence
        let rule: RouteRule
        let now: Int64
        /// A sign-out may present an already signed-out token (its retry after a 503 is idempotent).
        let acceptingRevoked: Bool
    }

    /// Revocation, then the sender constraint (DPoP proof, certificate binding), then enrichment and the route.
    private func constrained(_ result: Result<VerifiedIdentity, AuthFailure>, _ request: Judged, on eventLoop: any EventLoop) -> Decision {
        guard case .success(let identity) = result else { return Self.apply(request, to: result) }
        if !request.acceptingRevoked, revocations.isRevoked(identity, token: request.token) {
            return .reject(Self.authentic(AuthFailure(.revoked, "token was signed out"), identity))
        }
        switch senderConstraints.check(
            identity, token: request.token, evidence: request.evidence, head: request.head, rule: request.rule, now: request.now,
            on: eventLoop)
        {
        case .pass:
            return enriched(identity, request, on: eventLoop)
        case .fail(let failure):
            return .reject(Self.authentic(failure, identity))
        case .pending(let future):
            let trace = TraceScope.current
            return .pending(future.flatMap { failure in
                if let failure { return eventLoop.makeSucceededFuture(.reject(Self.authentic(failure, identity))) }
                switch TraceScope.with(trace, { enriched(identity, request, on: eventLoop) }) {
                case .pending(let next): return next
                case let decision: return eventLoop.makeSucceededFuture(decision)
                }
            })
        }
    }

    /// Userinfo attributes (when configured) join the claims before the route's requirements see them.
    private func enriched(_ identity: VerifiedIdentity, _ request: Judged, on eventLoop: any EventLoop) -> Decision {
        let result = Result<VerifiedIdentity, AuthFailure>.success(identity)
        guard let userinfo else { return Self.apply(request, to: result) }
        switch userinfo.enrich(identity, token: request.token, now: request.now, on: eventLoop) {
        case .done(let enrichedIdentity):
            return Self.apply(request, to: .success(enrichedIdentity))
        case .pending(let future):
            return .pending(future.map { Self.apply(request, to: .success($0)) })
        }
    }

    /// The route's requirements, then its `when` rule.
    private static func apply(_ request: Judged, to result: Result<VerifiedIdentity, AuthFailure>) -> Decision {
        switch result {
        case .failure(let failure):
            return .reject(failure)
        case .success(let identity):
            let rule = request.rule
            let failure = rule.checkRequirements(claims: identity.claims)
                ?? rule.checkCondition(claims: identity.claims, request: RuleRequest(head: request.head, path: request.path, host: request.host))
            guard let failure else { return .admit(.verified(identity)) }
            return .reject(authentic(failure, identity))
        }
    }

    /// A refusal carries the `DPoP` challenge when the request used the DPoP scheme, when it is a DPoP refusal,
    /// or when the route takes DPoP only (RFC 9449 §7.1), with a fresh nonce when nonces are required.
    private func challenged(_ decision: Decision, evidence: SenderEvidence, rule: RouteRule, now: Int64) -> Decision {
        switch decision {
        case .admit: return decision
        case .pending(let future): return .pending(future.map { challenged($0, evidence: evidence, rule: rule, now: now) })
        case .reject(var failure):
            let requiresDPoP: Bool
            if let provider = failure.provider, let index = providerNames.firstIndex(of: provider) {
                requiresDPoP = senderConstraints.mode(rule: rule, providerIndex: index) == .required
            } else {
                requiresDPoP = senderConstraints.requiresDPoP(rule: rule, providerNames: providerNames)
            }
            guard evidence.scheme == .dpop || failure.reason.isSenderConstraint || requiresDPoP else { return decision }
            let nonce = senderConstraints.nonces.map { $0.issue(now: now) }
            failure.dpopChallenge = DPoPChallenge(offersBearer: !requiresDPoP, nonce: nonce)
            return .reject(failure)
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
