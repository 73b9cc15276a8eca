package import NIOCore
import GatehouseSyntax
package import GatehouseConfig
package import GatehouseTokens
import GatehouseTelemetry
package import GatehouseVocabulary

/// The token half of a request: parse -> provider by `iss` -> key by `kid` -> signature -> claims.
/// Everything is synchronous except a refetch for an unknown `kid`, which the caller waits on.
package struct TokenVerifier: Sendable {
    /// A token's verification: at once, or once a refetch, introspection or TokenReview answered.
    package typealias Verdict = Eventual<Result<VerifiedIdentity, AuthFailure>>

    package let keyStore: KeyStore
    package let providers: [Provider]
    let providerByIssuer: [String: Int]
    /// `providerByIssuer` as bytes, when it is short enough to search in order: a token's `iss` is found without
    /// making a `String` of it.
    let issuerBytes: [(issuer: [UInt8], index: Int)]
    package let leeway: Int64
    package let tokenMaxBytes: Int
    package let cache: VerifiedTokenCache
    package let rejected: RejectedTokenCache
    /// Header segments seen before: a new token of a known issuer's key skips decoding its header.
    package let headers = JWSHeaderMemo()
    package let onCacheLookup: @Sendable (_ hit: Bool) -> Void
    /// A token whose signature failed before, answered from the rejected cache (docs/security.md P47).
    package let onRejectedHit: @Sendable () -> Void
    /// The judges of opaque tokens (`type = "introspection"` providers).
    package let introspectors: [Introspector]
    /// Kubernetes providers with `token_review`: a verified token is also asked about.
    package let reviewers: [TokenReviewer]

    package init(
        keyStore: KeyStore, verification: VerificationSettings, tokenMaxBytes: Int, onCacheLookup: @escaping @Sendable (Bool) -> Void,
        onRejectedHit: @escaping @Sendable () -> Void = {}, introspectors: [Introspector] = [], reviewers: [TokenReviewer] = []
    ) {
        self.introspectors = introspectors
        self.reviewers = reviewers
        self.keyStore = keyStore
        self.providers = keyStore.providers
        var byIssuer: [String: Int] = [:]
        // Introspection providers are never chosen for a JWT: their tokens are opaque.
        for (index, provider) in keyStore.providers.enumerated() where provider.keySource != .introspection {
            for issuer in provider.issuers where byIssuer[issuer] == nil { byIssuer[issuer] = index }
        }
        self.providerByIssuer = byIssuer
        self.issuerBytes = byIssuer.count <= Self.issuersSearchedInOrder ? byIssuer.map { (Array($0.key.utf8), $0.value) } : []
        self.leeway = verification.leeway.components.seconds
        self.tokenMaxBytes = tokenMaxBytes
        self.cache = VerifiedTokenCache(capacity: verification.cacheSize)
        self.rejected = RejectedTokenCache(capacity: verification.cacheSize)
        self.onCacheLookup = onCacheLookup
        self.onRejectedHit = onRejectedHit
    }

    /// - Parameters:
    ///   - allowedProviders: the route's providers; empty allows every provider.
    ///   - recent: what this very token verified as on the same connection before (`RecentToken`):
    ///     used as a cache entry is (unexpired, key still published) without hashing the token.
    package func verify(
        _ token: Substring, allowedProviders: Set<String>, now: Int64, recent: VerifiedIdentity? = nil, on eventLoop: any EventLoop
    ) -> Verdict {
        let verdict = verifyToken(token, allowedProviders: allowedProviders, now: now, recent: recent, on: eventLoop)
        guard !reviewers.isEmpty else { return verdict }
        switch verdict {
        case .now(.success(let identity)):
            return reviewed(identity, token: token, now: now, on: eventLoop)
        case .now:
            return verdict
        case .later(let future):
            let trace = TraceScope.current
            return .later(future.flatMap { result in
                guard case .success(let identity) = result else { return eventLoop.makeSucceededFuture(result) }
                switch TraceScope.with(trace, { reviewed(identity, token: token, now: now, on: eventLoop) }) {
                case .now(let reviewed): return eventLoop.makeSucceededFuture(reviewed)
                case .later(let next): return next
                }
            })
        }
    }

    /// A token of a `token_review` provider is also asked about (its verdict cached like introspection's).
    private func reviewed(_ identity: VerifiedIdentity, token: Substring, now: Int64, on eventLoop: any EventLoop) -> Verdict {
        guard let reviewer = reviewers.first(where: { $0.providerIndex == identity.providerIndex }) else { return .now(.success(identity)) }
        switch reviewer.review(token, identity: identity, now: now, on: eventLoop) {
        case .later(let future):
            return .later(TraceScope.span("gatehouse.token_review", attributes: [("gatehouse.provider", .string(identity.providerName))],
                                            around: future))
        case let verdict:
            return verdict
        }
    }

    private func verifyToken(
        _ token: Substring, allowedProviders: Set<String>, now: Int64, recent: VerifiedIdentity?, on eventLoop: any EventLoop
    ) -> Verdict {
        if let recent, recent.expiry > now, isStillPublished(recent) {
            onCacheLookup(true)
            return .now(restrict(.success(recent), to: allowedProviders))
        }
        if !introspectors.isEmpty, !OpaqueToken.looksLikeCompactJWS(token),
           let verdict = introspect(token, allowedProviders: allowedProviders, now: now, on: eventLoop) {
            return verdict
        }
        let key = TokenKey(token)
        if let cached = cache.lookup(key, now: now), isStillPublished(cached) {
            onCacheLookup(true)
            return .now(restrict(.success(cached), to: allowedProviders))
        }
        onCacheLookup(false)
        if let rejection = rejected.lookup(key),
            allowedProviders.isEmpty || allowedProviders.contains(providers[rejection.provider].name),
            keyStore.usableKeys(provider: rejection.provider)?.fetchedAt == rejection.keysFetchedAt
        {
            onRejectedHit()
            return .now(.failure(rejection.failure))
        }
        let jws: CompactJWS
        do {
            jws = try CompactJWS.parse(bytes: key.tokenBytes, maxBytes: tokenMaxBytes, headers: headers)
        } catch {
            return .now(.failure(error))
        }
        let index: Int
        switch select(jws, allowedProviders: allowedProviders) {
        case .failure(let failure): return .now(.failure(failure))
        case .success(let selected): index = selected
        }
        guard let snapshot = keyStore.usableKeys(provider: index) else {
            return .now(.failure(keysUnavailable(jws, index)))
        }
        let keys = snapshot.keySet.candidates(keyID: jws.keyID, algorithm: jws.algorithm)
        if keys.isEmpty && !isKeyIDKnown(jws.keyID, in: snapshot) {
            return unknownKey(jws, provider: index, in: snapshot, tokenKey: key, now: now, on: eventLoop)
        }
        return .now(check(key, jws, provider: index, keys: keys, keysFetchedAt: snapshot.fetchedAt, now: now))
    }

    /// An opaque token on a route that allows introspection providers goes to exactly one of them: the one
    /// whose `token_prefix` it has, or the only one (configuration makes sure no token can match two).
    /// nil: the route allows none, and the token is judged as a JWS (`malformed_token`).
    private func introspect(_ token: Substring, allowedProviders: Set<String>, now: Int64, on eventLoop: any EventLoop) -> Verdict? {
        let allowed = introspectors.filter { allowedProviders.isEmpty || allowedProviders.contains($0.provider.name) }
        guard !allowed.isEmpty else { return nil }
        guard token.utf8.count <= tokenMaxBytes else {
            return .now(.failure(AuthFailure(.malformedToken, "token is \(token.utf8.count) bytes, more than the limit of \(tokenMaxBytes)")))
        }
        let chosen = allowed.first { $0.hasTokenPrefix && $0.takes(token) } ?? (allowed.count == 1 && allowed[0].takes(token) ? allowed[0] : nil)
        guard let chosen else {
            return .now(.failure(AuthFailure(.unknownIssuer, "no introspection provider on this route takes this opaque token")))
        }
        return chosen.introspect(token, now: now, on: eventLoop)
    }

    /// An Entra provider whose issuer template can have produced this `iss` (the tenant is checked against the
    /// token's own `tid` once the signature verified: `EntraPreset.checkClaims`).
    private func providerByTemplate(_ issuer: String) -> Int? {
        providers.firstIndex { provider in provider.issuerTemplates.contains { $0.tenant(in: issuer) != nil } }
    }

    /// Up to this many issuers are compared byte by byte (`issuerBytes`); more are looked up by hash.
    private static let issuersSearchedInOrder = 16

    /// The provider whose issuer `iss` is: found by its bytes when it is one of `issuerBytes` (the same index the
    /// `String` lookup gives: equal bytes are equal strings), else by `providerByIssuer` and the issuer templates.
    private func providerIndex(issuerOf claims: LazyJSONObject) -> Int? {
        let found = claims.withPlainString("iss") { bytes in
            issuerBytes.first { $0.issuer.elementsEqual(bytes) }?.index
        }
        if let found, let index = found { return index }
        guard let issuer = claims["iss"]?.stringValue else { return nil }
        return providerByIssuer[issuer] ?? providerByTemplate(issuer)
    }

    /// Provider by `iss`, the route's provider list, and the provider's algorithm allow-list.
    private func select(_ jws: CompactJWS, allowedProviders: Set<String>) -> Result<Int, AuthFailure> {
        guard let index = providerIndex(issuerOf: jws.claimSet) else {
            let failure = AuthFailure(.unknownIssuer, "iss is not the issuer of any configured provider")
            return .failure(diagnosed(failure, jws, nil))
        }
        let provider = providers[index]
        if !allowedProviders.isEmpty && !allowedProviders.contains(provider.name) {
            return .failure(diagnosed(AuthFailure(.unknownIssuer, "provider \(provider.name) is not allowed on this route"), jws, index))
        }
        guard provider.algorithms.contains(jws.algorithm) else {
            let failure = AuthFailure(.unsupportedAlgorithm, "\(jws.algorithm.rawValue) is not allowed for provider \(provider.name)")
            return .failure(diagnosed(failure, jws, index))
        }
        return .success(index)
    }

    package func check(
        _ key: TokenKey, _ jws: CompactJWS, provider index: Int, keys: ArraySlice<VerificationKey>, keysFetchedAt: NIODeadline, now: Int64
    ) -> Result<VerifiedIdentity, AuthFailure> {
        guard !keys.isEmpty else {
            let detail = "key \(jws.keyID ?? "(no kid)") does not allow \(jws.algorithm.rawValue)"
            return .failure(diagnosed(AuthFailure(.unsupportedAlgorithm, detail), jws, index))
        }
        guard keys.contains(where: { $0.isValidSignature(jws.signature, for: jws.signingInput, algorithm: jws.algorithm) }) else {
            let failure = diagnosed(AuthFailure(.badSignature, "signature does not verify"), jws, index)
            rejected.insert(key, RejectedTokenCache.Rejection(failure: failure, provider: index, keysFetchedAt: keysFetchedAt))
            return .failure(failure)
        }
        let provider = providers[index]
        let claims = jws.claimSet
        let presented: PresentedClaims
        do {
            try provider.checkTokenType(jws.header)
            try ClaimChecks.checkTimes(claims, now: now, leeway: leeway)
            // `sub` names the user upstream: it must be a string when present (docs/security.md J32).
            _ = try ClaimChecks.string("sub", in: claims, required: false)
            try provider.checkAudience(claims)
            presented = try provider.checkPresetRules(claims, now: now, leeway: leeway)
        } catch {
            var failure = diagnosed(error, jws, index)
            failure.subject = claims["sub"]?.stringValue  // authentic: the signature verified
            return .failure(failure)
        }
        let claimSet: VerifiedIdentity.Claims
        switch presented {
        case .asSigned: claimSet = .signed(claims)
        case .members(let members): claimSet = .members(members)
        }
        let identity = VerifiedIdentity(
            providerIndex: index,
            providerName: provider.name,
            claimSet: claimSet,
            payload: .inToken(jws.encodedPayload.indices),
            keyID: jws.keyID,
            expiry: claims["exp"]?.integerValue ?? now,
            keysFetchedAt: keysFetchedAt,
            token: key.tokenBytes
        )
        cache.insert(key, identity)
        var fresh = identity
        fresh.verifiedNow = true
        return .success(fresh)
    }

    private func restrict(_ result: Result<VerifiedIdentity, AuthFailure>, to allowed: Set<String>) -> Result<VerifiedIdentity, AuthFailure> {
        guard case .success(let identity) = result, !allowed.isEmpty, !allowed.contains(identity.providerName) else { return result }
        var failure = AuthFailure(.unknownIssuer, "provider \(identity.providerName) is not allowed on this route")
        failure.provider = identity.providerName
        failure.issuer = identity.claim("iss")?.stringValue
        failure.keyID = identity.keyID
        return .failure(failure)
    }

    /// A cached identity stays good only while its provider's key set is the one it was verified
    /// against: after a refresh the token is verified again, so a key removed, or replaced under the
    /// same `kid`, is never vouched for by an earlier check (docs/security.md K14).
    private func isStillPublished(_ identity: VerifiedIdentity) -> Bool {
        keyStore.usableKeysFetchedAt(provider: identity.providerIndex) == identity.keysFetchedAt
    }

    /// A token without `kid` counts as naming an unknown key: only a set with one fitting key can serve it.
    func isKeyIDKnown(_ keyID: String?, in snapshot: KeySnapshot) -> Bool {
        guard let keyID else { return false }
        return snapshot.keySet.keys.contains { $0.keyID == keyID }
    }

    package func keysUnavailable(_ jws: CompactJWS, _ index: Int) -> AuthFailure {
        diagnosed(AuthFailure(.keysUnavailable, "provider \(providers[index].name) has no usable keys"), jws, index)
    }

    /// Adds what the failure log may say about a token whose signature has not (yet) verified.
    func diagnosed(_ failure: AuthFailure, _ jws: CompactJWS, _ index: Int?) -> AuthFailure {
        var failure = failure
        failure.provider = index.map { providers[$0].name }
        failure.issuer = failure.issuer ?? jws.claimSet["iss"]?.stringValue.map { LogText.truncated($0) }
        failure.keyID = failure.keyID ?? jws.keyID.map { LogText.truncated($0) }
        failure.algorithm = failure.algorithm ?? jws.algorithm.rawValue
        return failure
    }
}
