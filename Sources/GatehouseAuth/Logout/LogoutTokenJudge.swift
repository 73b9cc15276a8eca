package import NIOCore
import GatehouseSyntax
import GatehouseConfig
package import GatehouseTokens
package import GatehouseVocabulary

/// Judges a logout token POSTed to `/.gatehouse/backchannel-logout/<provider>` exactly as OpenID Connect Back-Channel
/// Logout 1.0 §2.6 says, with the provider's keys (the same rotation-aware cache as its access tokens): every refusal is
/// an `AuthFailure` with its reason, for the failure log (docs/reference.md §7.3, docs/security.md §25).
package struct LogoutTokenJudge: Sendable {
    package let verifier: TokenVerifier

    package init(verifier: TokenVerifier) {
        self.verifier = verifier
    }

    /// The `events` member every logout token carries (§2.4).
    static let logoutEvent = "http://schemas.openid.net/event/backchannel-logout"

    /// The index of the provider `name` if it takes back-channel logouts.
    package func provider(named name: String) -> Int? {
        verifier.providers.firstIndex { $0.name == name && $0.backchannelLogout != nil }
    }

    package func judge(_ token: Substring, provider index: Int, now: Int64, on eventLoop: any EventLoop) -> TokenVerifier.KeyedJudgement<LogoutToken> {
        let jws: CompactJWS
        do {
            jws = try CompactJWS.parse(token, maxBytes: verifier.tokenMaxBytes)
        } catch {
            var failure = error
            failure.provider = verifier.providers[index].name
            return .now(.failure(failure))
        }
        let provider = verifier.providers[index]
        guard let issuer = jws.claimSet["iss"]?.stringValue, provider.issuers.contains(issuer) else {
            return .now(.failure(verifier.diagnosed(AuthFailure(.unknownIssuer, "iss is not provider \(provider.name)'s issuer"), jws, index)))
        }
        guard provider.algorithms.contains(jws.algorithm) else {
            let failure = AuthFailure(.unsupportedAlgorithm, "\(jws.algorithm.rawValue) is not allowed for provider \(provider.name)")
            return .now(.failure(verifier.diagnosed(failure, jws, index)))
        }
        guard let snapshot = verifier.keyStore.usableKeys(provider: index) else {
            return .now(.failure(verifier.keysUnavailable(jws, index)))
        }
        let keys = snapshot.keySet.candidates(keyID: jws.keyID, algorithm: jws.algorithm)
        if keys.isEmpty && !verifier.isKeyIDKnown(jws.keyID, in: snapshot) {
            return verifier.withUnknownKey(jws, provider: index, in: snapshot, on: eventLoop) { keys, _ in
                check(jws, provider: index, keys: keys, now: now)
            }
        }
        return .now(check(jws, provider: index, keys: keys, now: now))
    }

    /// The signature, then the claims (§2.6 steps 3-7; step 8, the `jti` seen before, is the caller's: it needs the store).
    package func check(_ jws: CompactJWS, provider index: Int, keys: ArraySlice<VerificationKey>, now: Int64) -> Result<LogoutToken, AuthFailure> {
        guard !keys.isEmpty else {
            let detail = "key \(jws.keyID ?? "(no kid)") does not allow \(jws.algorithm.rawValue)"
            return .failure(verifier.diagnosed(AuthFailure(.unsupportedAlgorithm, detail), jws, index))
        }
        guard keys.contains(where: { $0.isValidSignature(jws.signature, for: jws.signingInput, algorithm: jws.algorithm) }) else {
            return .failure(verifier.diagnosed(AuthFailure(.badSignature, "signature does not verify"), jws, index))
        }
        let provider = verifier.providers[index]
        do {
            return .success(try claims(jws, provider: provider, now: now))
        } catch {
            var failure = verifier.diagnosed(error, jws, index)
            failure.subject = jws.claimSet["sub"]?.stringValue  // authentic: the signature verified
            return .failure(failure)
        }
    }

    private func claims(_ jws: CompactJWS, provider: Provider, now: Int64) throws(AuthFailure) -> LogoutToken {
        let rules = provider.backchannelLogout ?? BackchannelLogoutSettings()
        switch jws.header["typ"] {
        case nil where rules.requireTyp:
            throw AuthFailure(.wrongTokenType, "no typ; provider \(provider.name) requires logout+jwt")
        case nil:
            break
        case .string(let type)? where MediaTypeName.matches(type, "logout+jwt"):
            break
        default:
            throw AuthFailure(.wrongTokenType, "typ is not logout+jwt")
        }
        let claims = jws.claimSet
        let presented = try ClaimChecks.audiences(claims)
        guard presented.contains(where: provider.logoutAudiences.contains) else {
            throw AuthFailure(.wrongAudience, "aud names none of provider \(provider.name)'s audiences")
        }
        let leeway = verifier.leeway
        guard let iatValue = claims["iat"] else { throw AuthFailure(.invalidClaims, "iat missing") }
        let issuedAt = try ClaimChecks.numericDate(iatValue, name: "iat")
        if issuedAt > now + leeway { throw AuthFailure(.notYetValid, "iat is \(issuedAt - now)s in the future") }
        if let nbfValue = claims["nbf"], try ClaimChecks.numericDate(nbfValue, name: "nbf") > now + leeway {
            throw AuthFailure(.notYetValid, "nbf is in the future")
        }
        let validUntil: Int64
        if let expValue = claims["exp"] {
            let expiry = try ClaimChecks.numericDate(expValue, name: "exp")
            if expiry + leeway <= now { throw AuthFailure(.expired, "exp is \(now - expiry)s in the past") }
            validUntil = expiry + leeway
        } else {
            let maxAge = rules.maxTokenAge.components.seconds
            if now - issuedAt > maxAge + leeway {
                throw AuthFailure(.expired, "no exp, and iat is \(now - issuedAt)s old, more than max_logout_token_age (\(maxAge)s)")
            }
            validUntil = issuedAt + maxAge + leeway
        }
        guard let jti = try ClaimChecks.string("jti", in: claims, required: true), !jti.isEmpty else {
            throw AuthFailure(.invalidClaims, "jti is empty")
        }
        guard case .object(let events)? = claims["events"] else { throw AuthFailure(.invalidClaims, "events missing or not an object") }
        guard case .object? = events[Self.logoutEvent] else {
            throw AuthFailure(.invalidClaims, "events has no \(Self.logoutEvent) object")
        }
        let sid = try ClaimChecks.string("sid", in: claims, required: false)
        let subject = try ClaimChecks.string("sub", in: claims, required: false)
        guard sid?.isEmpty == false || subject?.isEmpty == false else { throw AuthFailure(.invalidClaims, "neither sid nor sub") }
        guard claims["nonce"] == nil else { throw AuthFailure(.invalidClaims, "nonce present: an ID token is not a logout token") }
        return LogoutToken(
            provider: provider.name, sid: sid?.isEmpty == false ? sid : nil, subject: subject?.isEmpty == false ? subject : nil, jti: jti,
            issuedAt: issuedAt, replayableUntil: validUntil - leeway + Revocation.retentionAfterExpiry)
    }
}
