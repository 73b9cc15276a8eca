package import NIOCore
package import NIOHTTP1
package import GatehouseSyntax
package import GatehouseConfig
package import GatehouseTokens
import GatehouseTelemetry
package import GatehouseVocabulary
package import GatehousePolicy

/// Decides one request: route -> token -> verification -> the route's requirements.
package struct Gatekeeper: Sendable {
    /// What the gatekeeper answers: a verdict at once, or one still to come (a key refetch, introspection, userinfo,
    /// a shared replay store).
    package typealias Decision = Eventual<GateVerdict>

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
    /// By provider index: the provider's own `audiences` when it is the authorization server of a `[[resource]]` (its
    /// tokens may then name the resource's url, which only a request under that resource accepts); nil otherwise.
    package let ownAudiences: [Set<String>?]

    package init(
        routes: RouteTable, verifier: TokenVerifier, verification: VerificationSettings, userinfo: UserinfoEnricher?,
        revocations: RevocationList, senderConstraints: SenderConstraints, providerNames: [String], ownAudiences: [Set<String>?] = []
    ) {
        self.ownAudiences = ownAudiences
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
        resource: ProtectedResource? = nil,
        mcp: MCPMessage? = nil,
        on eventLoop: any EventLoop
    ) -> Decision {
        let decision = decideToken(
            head, path: path, host: host, rule: rule, token: token, evidence: evidence, now: now, acceptingRevoked: acceptingRevoked,
            recent: recent, resource: resource, mcp: mcp, on: eventLoop)
        // An MCP session id is judged once who is asking is known (docs/reference.md §17.4).
        guard let resource, resource.settings.mcp, let sessionID = head.headers.first(name: "mcp-session-id") else { return decision }
        // A switch, not `map`: the closure is made only for a decision still to come (most are made at once).
        switch decision {
        case .now(let verdict): return .now(sessionChecked(verdict, sessionID: sessionID, now: now))
        case .later(let future): return .later(future.map { sessionChecked($0, sessionID: sessionID, now: now) })
        }
    }

    /// Route, token, verification and the route's requirements.
    private func decideToken(
        _ head: HTTPRequestHead, path: String, host: String?, rule: RouteRule, token: BearerToken, evidence: SenderEvidence, now: Int64,
        acceptingRevoked: Bool, recent: VerifiedIdentity?, resource: ProtectedResource?, mcp: MCPMessage?, on eventLoop: any EventLoop
    ) -> Decision {
        if rule.auth == .public || isAllowedPreflight(head) { return .now(.admit(.anonymous)) }
        let presented: Substring
        switch token {
        case .absent:
            guard rule.auth != .optional else { return .now(.admit(.guest)) }
            return .now(challenged(.reject(AuthFailure(.missingToken, "no bearer token")), evidence: evidence, rule: rule, now: now))
        case .malformed(let detail):
            return .now(challenged(.reject(AuthFailure(.malformedToken, detail)), evidence: evidence, rule: rule, now: now))
        case .present(let value):
            presented = value
        }
        // The request's parts go to each step as they are: no value gathering them is made for a decision reached at
        // once (its copy cost a reference to each part, issue 57); a step that waits captures what it reads.
        @Sendable func afterVerification(_ result: Result<VerifiedIdentity, AuthFailure>) -> Decision {
            constrained(
                result, head: head, path: path, host: host, token: presented, evidence: evidence, rule: rule, now: now,
                acceptingRevoked: acceptingRevoked, resource: resource, mcp: mcp, on: eventLoop)
        }
        let decision: Decision
        switch verifier.verify(presented, allowedProviders: rule.providers, now: now, recent: recent, on: eventLoop) {
        case .now(let result):
            decision = afterVerification(result)
        case .later(let future):
            let trace = TraceScope.current  // the steps after the wait are this request's too
            decision = .later(future.flatMap { result in TraceScope.with(trace, { afterVerification(result) }).future(on: eventLoop) })
        }
        switch decision {
        case .now(let verdict): return .now(challenged(verdict, evidence: evidence, rule: rule, now: now))
        case .later(let future): return .later(future.map { challenged($0, evidence: evidence, rule: rule, now: now) })
        }
    }

    /// Revocation, then the sender constraint (DPoP proof, certificate binding), then enrichment and the route.
    private func constrained(
        _ result: Result<VerifiedIdentity, AuthFailure>, head: HTTPRequestHead, path: String, host: String?, token: Substring,
        evidence: SenderEvidence, rule: RouteRule, now: Int64, acceptingRevoked: Bool, resource: ProtectedResource?, mcp: MCPMessage?,
        on eventLoop: any EventLoop
    ) -> Decision {
        let identity: VerifiedIdentity
        switch result {
        case .success(let verified): identity = verified
        case .failure(let failure): return .now(.reject(failure))
        }
        @Sendable func enrichedNow() -> Decision {
            enriched(identity, head: head, path: path, host: host, token: token, rule: rule, now: now, resource: resource, mcp: mcp, on: eventLoop)
        }
        if !acceptingRevoked, revocations.isRevoked(identity, token: token) {
            return .now(.reject(Self.authentic(AuthFailure(.revoked, "token was signed out"), identity)))
        }
        switch senderConstraints.check(identity, token: token, evidence: evidence, head: head, rule: rule, now: now, on: eventLoop) {
        case .now(nil):
            return enrichedNow()
        case .now(let failure?):
            return .now(.reject(Self.authentic(failure, identity)))
        case .later(let future):
            let trace = TraceScope.current
            return .later(future.flatMap { failure in
                if let failure { return eventLoop.makeSucceededFuture(.reject(Self.authentic(failure, identity))) }
                return TraceScope.with(trace, enrichedNow).future(on: eventLoop)
            })
        }
    }

    /// Userinfo attributes (when configured) join the claims before the route's requirements see them.
    private func enriched(
        _ identity: VerifiedIdentity, head: HTTPRequestHead, path: String, host: String?, token: Substring, rule: RouteRule, now: Int64,
        resource: ProtectedResource?, mcp: MCPMessage?, on eventLoop: any EventLoop
    ) -> Decision {
        guard let userinfo else {
            return .now(Self.apply(identity, rule: rule, head: head, path: path, host: host, mcp: mcp, resource: resource, ownAudiences: ownAudiences))
        }
        return userinfo.enrich(identity, token: token, now: now, on: eventLoop).map { [ownAudiences] in
            Self.apply($0, rule: rule, head: head, path: path, host: host, mcp: mcp, resource: resource, ownAudiences: ownAudiences)
        }
    }

    /// The route's requirements, then its `when` rule.
    private static func apply(
        _ identity: VerifiedIdentity, rule: RouteRule, head: HTTPRequestHead, path: String, host: String?, mcp: MCPMessage?,
        resource: ProtectedResource?, ownAudiences: [Set<String>?]
    ) -> GateVerdict {
        // The rule's request is made only for a route with a `when` rule (it retains the head's parts).
        let failure = resourceAudienceFailure(identity, resource: resource, ownAudiences: ownAudiences)
            ?? rule.checkRequirements(claims: identity)
            ?? (rule.condition == nil
                ? nil : rule.checkCondition(claims: identity.claims, request: RuleRequest(head: head, path: path, host: host, mcp: mcp)))
        guard let failure else { return .admit(.verified(identity)) }
        return .reject(authentic(failure, identity))
    }

    /// RFC 8707 audience binding (docs/reference.md §17.2): under a resource the token's `aud` must name its url exactly,
    /// whatever the provider's `audiences`; elsewhere a token of a resource's authorization server must name one of the
    /// provider's own audiences (a token issued for a resource is good for that resource only).
    private static func resourceAudienceFailure(
        _ identity: VerifiedIdentity, resource: ProtectedResource?, ownAudiences: [Set<String>?]
    ) -> AuthFailure? {
        if let resource {
            let url = resource.settings.url
            if case .string(let audience)? = identity.claim("aud"), audience == url { return nil }
            let audiences = (try? ClaimChecks.audiences(identity)) ?? []
            return audiences.contains(url) ? nil : AuthFailure(.wrongAudience, "aud does not name the resource \(url)")
        }
        guard identity.providerIndex < ownAudiences.count, let own = ownAudiences[identity.providerIndex] else { return nil }
        if case .string(let audience)? = identity.claim("aud"), own.contains(audience) { return nil }
        let audiences = (try? ClaimChecks.audiences(identity)) ?? []
        return audiences.contains(where: own.contains)
            ? nil : AuthFailure(.wrongAudience, "aud names a protected resource, and this request is not under it")
    }

    /// A request with an MCP session id bound to another identity (or bound while the request has none) is refused
    /// `session_mismatch`; an id with no binding, or the owner's, goes on.
    private func sessionChecked(_ verdict: GateVerdict, sessionID: String, now: Int64) -> GateVerdict {
        switch verdict {
        case .reject: return verdict
        case .admit(let admission):
            guard let binding = revocations.session(sessionID, now: now) else { return verdict }
            let failure = AuthFailure(.sessionMismatch, "the session is bound to another identity")
            guard case .verified(let identity) = admission else { return .reject(failure) }
            return binding.owner == MCPSessionOwner.of(identity) ? verdict : .reject(Self.authentic(failure, identity))
        }
    }

    /// A refusal carries the `DPoP` challenge when the request used the DPoP scheme, when it is a DPoP refusal,
    /// or when the route takes DPoP only (RFC 9449 §7.1), with a fresh nonce when nonces are required.
    private func challenged(_ verdict: GateVerdict, evidence: SenderEvidence, rule: RouteRule, now: Int64) -> GateVerdict {
        switch verdict {
        case .admit: return verdict
        case .reject(var failure):
            let requiresDPoP: Bool
            if let provider = failure.provider, let index = providerNames.firstIndex(of: provider) {
                requiresDPoP = senderConstraints.mode(rule: rule, providerIndex: index) == .required
            } else {
                requiresDPoP = senderConstraints.requiresDPoP(rule: rule, providerNames: providerNames)
            }
            guard evidence.scheme == .dpop || failure.reason.isSenderConstraint || requiresDPoP else { return verdict }
            let nonce = senderConstraints.nonces.map { $0.issue(now: now) }
            failure.dpopChallenge = DPoPChallenge(offersBearer: !requiresDPoP, nonce: nonce)
            return .reject(failure)
        }
    }

    /// A failure of a token whose signature verified: the log may name its subject.
    private static func authentic(_ failure: AuthFailure, _ identity: VerifiedIdentity) -> AuthFailure {
        var failure = failure
        failure.provider = identity.providerName
        failure.issuer = identity.claim("iss")?.stringValue
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
