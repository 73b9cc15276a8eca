import Crypto
package import NIOCore
package import NIOHTTP1
import GatehouseSyntax
package import GatehouseConfig
package import GatehouseTokens
import GatehouseTelemetry
package import GatehouseVocabulary
package import GatehousePolicy

/// The sender-constraint step of a decision, after the token verified and before its route's
/// requirements: a token bound to a key (`cnf.jkt`, RFC 9449) must come with a valid DPoP proof of
/// that key, a token bound to a certificate (`cnf.x5t#S256`, RFC 8705) over a connection that
/// presented that certificate, and a route or provider that requires DPoP takes nothing else.
package struct SenderConstraints: Sendable {
    /// The refusal the sender constraint calls for, nil when it holds: at once, or once the shared replay store
    /// answered (nil when the proof is fresh there too).
    package typealias Outcome = Eventual<AuthFailure?>

    /// Each provider's `dpop`, by provider index.
    package let providerModes: [DPoPMode]
    package let proofLifetime: Int64
    package let leeway: Int64
    /// `[dpop] external_url`; nil: the listener's scheme and the request's Host.
    package let externalOrigin: String?
    package let listenerScheme: String
    package let proofMaxBytes: Int
    package let nonces: DPoPNonces?
    package let replay: DPoPReplayCache
    /// Records the proof in the store every replica shares; the future says whether it was fresh there.
    package let sharedReplay: (@Sendable (DPoPReplayCache.Key, _ expiresAt: Int64, any EventLoop) -> EventLoopFuture<Bool>)?
    /// `[listen] client_cert_header`: the certificate a trusted proxy in front checked.
    package let forwardedCertificate: ForwardedClientCertificate?

    package init(
        providerModes: [DPoPMode], proofLifetime: Int64, leeway: Int64, externalOrigin: String?,
        listenerScheme: String, proofMaxBytes: Int, nonces: DPoPNonces?, replay: DPoPReplayCache,
        sharedReplay: (@Sendable (DPoPReplayCache.Key, _ expiresAt: Int64, any EventLoop) -> EventLoopFuture<Bool>)?,
        forwardedCertificate: ForwardedClientCertificate?
    ) {
        self.providerModes = providerModes
        self.proofLifetime = proofLifetime
        self.leeway = leeway
        self.externalOrigin = externalOrigin
        self.listenerScheme = listenerScheme
        self.proofMaxBytes = proofMaxBytes
        self.nonces = nonces
        self.replay = replay
        self.sharedReplay = sharedReplay
        self.forwardedCertificate = forwardedCertificate
    }

    /// The mode a request is judged by: the route's, else its token's provider's.
    package func mode(rule: RouteRule, providerIndex: Int) -> DPoPMode {
        rule.dpop ?? providerModes[providerIndex]
    }

    /// For a request without a token: whether the route requires DPoP (a route without its own `dpop`
    /// requires it when every provider it allows does).
    func requiresDPoP(rule: RouteRule, providerNames: [String]) -> Bool {
        if let mode = rule.dpop { return mode == .required }
        let allowed = providerNames.indices.filter { rule.providers.isEmpty || rule.providers.contains(providerNames[$0]) }
        return !allowed.isEmpty && allowed.allSatisfy { providerModes[$0] == .required }
    }

    package func check(
        _ identity: VerifiedIdentity, token: Substring, evidence: SenderEvidence, head: HTTPRequestHead, rule: RouteRule, now: Int64,
        on eventLoop: any EventLoop
    ) -> Outcome {
        let confirmation = identity.claim("cnf")
        if confirmation != nil, confirmation?.objectValue == nil {
            return .fail(AuthFailure(.invalidClaims, "cnf is not an object"))
        }
        if let failure = checkCertificate(confirmation?.objectValue?["x5t#S256"], evidence: evidence, headers: head.headers) {
            return .fail(failure)
        }
        let boundKey = confirmation?.objectValue?["jkt"]
        if boundKey != nil, boundKey?.stringValue == nil { return .fail(AuthFailure(.invalidClaims, "cnf.jkt is not a string")) }
        let mode = mode(rule: rule, providerIndex: identity.providerIndex)
        switch evidence.scheme {
        case .bearer:
            if boundKey != nil {
                return .fail(AuthFailure(.bearerDowngrade, "a DPoP-bound token (cnf.jkt) was presented as a bearer token"))
            }
            if mode == .required { return .fail(AuthFailure(.dpopRequired, "this route takes DPoP-bound tokens only")) }
            return .pass
        case .dpop:
            if mode == .off { return .fail(DPoPProof.invalid("DPoP is off for this route and provider")) }
            return checkProof(evidence.proof, boundKey: boundKey?.stringValue, token: token, head: head, now: now, on: eventLoop)
        }
    }

    /// RFC 8705 §3: the token's `x5t#S256` must be the thumbprint of the connection's client certificate, or
    /// of the one a trusted proxy in front forwarded.
    private func checkCertificate(_ bound: JSONValue?, evidence: SenderEvidence, headers: HTTPHeaders) -> AuthFailure? {
        guard let bound else { return nil }
        guard let expected = bound.stringValue else { return AuthFailure(.invalidClaims, "cnf.x5t#S256 is not a string") }
        let forwarded = { forwardedCertificate?.thumbprint(in: headers, clientIP: evidence.clientIP) }
        guard let presented = evidence.certificateThumbprint ?? forwarded() else {
            return AuthFailure(.certificateBindingMismatch, "the token is bound to a client certificate and none was presented")
        }
        guard presented.utf8.elementsEqualConstantTime(expected.utf8) else {
            return AuthFailure(.certificateBindingMismatch, "the token is bound to another client certificate")
        }
        return nil
    }

    private func checkProof(
        _ header: SenderEvidence.ProofHeader, boundKey: String?, token: Substring, head: HTTPRequestHead, now: Int64,
        on eventLoop: any EventLoop
    ) -> Outcome {
        let text: Substring
        switch header {
        case .absent: return .fail(DPoPProof.invalid("the DPoP scheme without a DPoP proof header"))
        case .several: return .fail(DPoPProof.invalid("more than one DPoP header"))
        case .one(let value): text = value
        }
        let proof: DPoPProof
        do {
            proof = try DPoPProof.verify(text, maxBytes: proofMaxBytes)
        } catch {
            return .fail(error)
        }
        if let failure = checkRequest(proof, token: token, head: head, now: now) { return .fail(failure) }
        if let nonces {
            guard let nonce = proof.nonce else { return .fail(AuthFailure(.useDPoPNonce, "the proof has no nonce")) }
            guard nonces.isValid(nonce, now: now) else {
                return .fail(AuthFailure(.useDPoPNonce, "the proof's nonce is expired or was not issued here"))
            }
        }
        guard let boundKey else {
            return .fail(AuthFailure(.dpopBindingMismatch, "the token is not DPoP-bound (no cnf.jkt)"))
        }
        guard boundKey.utf8.elementsEqualConstantTime(proof.thumbprint.utf8) else {
            return .fail(AuthFailure(.dpopBindingMismatch, "cnf.jkt is not the thumbprint of the proof's key"))
        }
        return checkReplay(proof, now: now, on: eventLoop)
    }

    /// RFC 9449 §4.3 checks 8–10 and 12 (`htm`, `htu`, `iat`, `ath`).
    private func checkRequest(_ proof: DPoPProof, token: Substring, head: HTTPRequestHead, now: Int64) -> AuthFailure? {
        guard proof.method == head.method.rawValue else {
            return DPoPProof.invalid("htm \(LogText.truncated(proof.method, maxBytes: 32)) is not the request method \(head.method.rawValue)")
        }
        guard let claimed = DPoPTargetURI.normalized(proof.targetURI) else {
            return DPoPProof.invalid("htu is not an absolute http(s) URI")
        }
        guard let requested = requestURI(head), claimed == requested else {
            return DPoPProof.invalid("htu is not the URI of this request")
        }
        let window = proofLifetime + max(0, leeway)
        if proof.issuedAt < now - window { return DPoPProof.invalid("proof iat is more than \(window)s old") }
        if proof.issuedAt > now + window { return DPoPProof.invalid("proof iat is more than \(window)s in the future") }
        guard let hash = proof.accessTokenHash else { return DPoPProof.invalid("proof has no ath") }
        let expected = Base64URL.encode(SHA256.hash(data: token.utf8Bytes))
        guard hash.utf8.elementsEqualConstantTime(expected.utf8) else {
            return DPoPProof.invalid("ath is not the hash of the presented access token")
        }
        return nil
    }

    private func requestURI(_ head: HTTPRequestHead) -> String? {
        if let externalOrigin { return DPoPTargetURI.requestURI(origin: externalOrigin, target: head.uri) }
        guard let host = head.headers.first(name: "host") else { return nil }
        return DPoPTargetURI.requestURI(origin: listenerScheme + "://" + host, target: head.uri)
    }

    /// RFC 9449 §11.1: a `jti` is accepted once while its proof's `iat` is in the window, here and, with a
    /// shared revocation store, on every replica.
    private func checkReplay(_ proof: DPoPProof, now: Int64, on eventLoop: any EventLoop) -> Outcome {
        let key = DPoPReplayCache.Key(thumbprint: proof.thumbprint, identifier: proof.identifier)
        let expiresAt = proof.issuedAt + proofLifetime + max(0, leeway)
        switch replay.claim(key, expiresAt: expiresAt, now: now) {
        case .replayed: return .fail(AuthFailure(.dpopReplay, "this proof's jti was already used"))
        case .full: return .fail(AuthFailure(.dpopUnavailable, "the DPoP replay cache is full"))
        case .fresh: break
        }
        guard let sharedReplay else { return .pass }
        return .later(TraceScope.span("gatehouse.dpop.replay_store", around: sharedReplay(key, expiresAt, eventLoop)).map { fresh in
            fresh ? nil : AuthFailure(.dpopReplay, "this proof's jti was already used on another replica")
        }.recover { error in
            AuthFailure(.dpopUnavailable, "the shared replay store did not answer: \(error)")
        })
    }
}

extension Eventual where Value == AuthFailure? {
    /// The sender constraint holds.
    static var pass: Self { .now(nil) }
    static func fail(_ failure: AuthFailure) -> Self { .now(failure) }
}
