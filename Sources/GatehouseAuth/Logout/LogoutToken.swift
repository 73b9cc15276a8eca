import Crypto
import GatehouseSyntax

/// A logout token that passed every rule of OpenID Connect Back-Channel Logout 1.0 §2.6 (`LogoutTokenJudge`): which
/// provider session or user the provider signed out, and for how long its `jti` must be remembered.
package struct LogoutToken: Sendable, Equatable {
    package var provider: String
    /// The provider's session (`sid`); with it, only that session's tokens are revoked.
    package var sid: String?
    package var subject: String?
    package var jti: String
    /// `iat`: the moment the provider signed the user out.
    package var issuedAt: Int64
    /// Until when the token could still be taken (its `exp`, or `iat` + `max_logout_token_age`, plus the largest leeway):
    /// its `jti` is remembered that long.
    var replayableUntil: Int64

    package init(provider: String, sid: String?, subject: String?, jti: String, issuedAt: Int64, replayableUntil: Int64) {
        self.provider = provider
        self.sid = sid
        self.subject = subject
        self.jti = jti
        self.issuedAt = issuedAt
        self.replayableUntil = replayableUntil
    }

    /// What it revokes: with `sid`, that session's tokens; with `sub` only, every token of the user; in both cases those
    /// issued at or before the logout (its `iat`, never later than `now`). The token decides it (`now` only caps an `iat`
    /// up to the leeway ahead), so taking the same token twice (a replay, or a retry after a 503) moves at most that much.
    package func revocation(now: Int64) -> Revocation? {
        let cutoff = min(issuedAt, now)
        if let sid { return .providerSession(provider: provider, sid: sid, issuedBefore: cutoff) }
        return subject.map { .subject(provider: provider, subject: $0, issuedBefore: cutoff) }
    }

    /// The key its `jti` is remembered under, in this replica and in the shared store (beside DPoP proofs, which are
    /// hex digests): `logout:` and the SHA-256 of provider and `jti`, so that any `jti` has one bounded key.
    package var replayKey: String {
        var input = Array(provider.utf8)
        input.append(0)
        input.append(contentsOf: jti.utf8)
        return "logout:" + SHA256.hash(data: input).map { String($0, radix: 16).leftPadded(to: 2) }.joined()
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
