package import NIOCore
import GatehouseSyntax
package import GatehouseTokens
import GatehouseTelemetry
package import GatehouseVocabulary

/// A token naming a `kid` its provider's key set lacks (or none, where the set has no single fitting key).
///
/// 401 `unknown_key` only with evidence that the kid is not the provider's (`UnknownKeyEvidence`); else a
/// refetch, and 503 `keys_unavailable` with `Retry-After` when none can be had now (the cooldown, a failed
/// or timed-out fetch): the holder of a token signed by a key just published retries instead of signing in
/// again, whatever other traffic spent the cooldown on (docs/reference.md §3.8, docs/security.md K03, K17).
extension TokenVerifier {
    /// What a judgement of a token naming an unknown key comes to: now, or once its provider's keys were refetched.
    package typealias KeyedJudgement<Value: Sendable> = Eventual<Result<Value, AuthFailure>>

    package func unknownKey(
        _ jws: CompactJWS, provider index: Int, in snapshot: KeySnapshot, tokenKey: TokenKey, now: Int64,
        on eventLoop: any EventLoop
    ) -> Verdict {
        withUnknownKey(jws, provider: index, in: snapshot, on: eventLoop) { keys, fetchedAt in
            check(tokenKey, jws, provider: index, keys: keys, keysFetchedAt: fetchedAt, now: now)
        }
    }

    /// The keys a token naming an unknown `kid` may be checked with: `check` is given them once a refetch found the kid
    /// (or a key without one fits), else the refusal or 503 the evidence calls for.
    func withUnknownKey<Value: Sendable>(
        _ jws: CompactJWS, provider index: Int, in snapshot: KeySnapshot, on eventLoop: any EventLoop,
        check: @escaping @Sendable (_ keys: ArraySlice<VerificationKey>, _ keysFetchedAt: NIODeadline) -> Result<Value, AuthFailure>
    ) -> KeyedJudgement<Value> {
        if let evidence = UnknownKeyEvidence.inSnapshot(snapshot, keyID: jws.keyID, issuedAt: jws.claimSet["iat"]?.integerValue, leeway: leeway) {
            return .now(.failure(notPublished(jws, index, evidence)))
        }
        let refetch: EventLoopFuture<Bool>
        switch keyStore.refetchForUnknownKey(provider: index, on: eventLoop) {
        case .coolingDown(let wait):
            let why = keyStore.lastFetchFailed(provider: index) ? "the last fetch of them failed" : "refetch cooldown active"
            return .now(.failure(cannotRefetch(jws, index, why: why, retryAfter: wait)))
        case .fetching(let fetch):
            refetch = fetch
        }
        let traced = TraceScope.span("gatehouse.jwks.fetch", attributes: [("gatehouse.provider", .string(providers[index].name))], around: refetch)
        return .later(traced.map { succeeded in
            guard let fresh = keyStore.usableKeys(provider: index) else { return .failure(keysUnavailable(jws, index)) }
            let keys = fresh.keySet.candidates(keyID: jws.keyID, algorithm: jws.algorithm)
            if !keys.isEmpty || isKeyIDKnown(jws.keyID, in: fresh) {
                return check(keys, fresh.fetchedAt)
            }
            guard succeeded else {
                return .failure(cannotRefetch(jws, index, why: "refetching them failed", retryAfter: keyStore.refetchAllowedIn(provider: index)))
            }
            return .failure(notPublished(jws, index, .absentFromFetchSinceArrival))
        })
    }

    private func notPublished(_ jws: CompactJWS, _ index: Int, _ evidence: UnknownKeyEvidence) -> AuthFailure {
        diagnosed(AuthFailure(.unknownKey, evidence.detail), jws, index)
    }

    /// 503: nothing says the kid is not the provider's, and its keys cannot be listed again now. `Retry-After`
    /// is when a refetch may start (at least a second).
    private func cannotRefetch(_ jws: CompactJWS, _ index: Int, why: String, retryAfter wait: TimeAmount) -> AuthFailure {
        var failure = AuthFailure(.keysUnavailable, "no key with this kid, and provider \(providers[index].name)'s keys cannot be listed again now: \(why)")
        failure.retryAfterSeconds = max(1, Int((wait.nanoseconds + 999_999_999) / 1_000_000_000))
        return diagnosed(failure, jws, index)
    }
}
