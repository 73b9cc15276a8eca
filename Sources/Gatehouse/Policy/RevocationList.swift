import Atomics
import Crypto
import NIOConcurrencyHelpers

/// Signed-out tokens and subjects, checked on every verified request (cached ones included).
///
/// In memory (`[revocation] store = "memory"`): entries last until their token would have expired,
/// and until a restart. The request path reads an immutable snapshot through one atomic load and
/// skips all work while nothing is revoked.
final class RevocationList: Sendable {
    struct Snapshot: Sendable {
        /// Token key (its `jti`, or SHA-256 of the token) -> the token's `exp`.
        var tokens: [String: Int64] = [:]
        /// Provider + subject -> tokens issued before this time (Unix seconds) are revoked.
        var subjects: [SubjectKey: Int64] = [:]
        var isEmpty: Bool { tokens.isEmpty && subjects.isEmpty }
    }

    struct SubjectKey: Hashable, Sendable {
        var provider: String
        var subject: String
    }

    final class Box: AtomicReference, Sendable {
        let snapshot: Snapshot
        init(_ snapshot: Snapshot) { self.snapshot = snapshot }
    }

    private let current = ManagedAtomic(Box(Snapshot()))
    /// Writers (sign-outs, rare) serialize here and publish a new snapshot.
    private let writeLock = NIOLock()

    /// The key a token is revoked under: its `jti` when it has one, else a digest of the whole token.
    static func tokenKey(_ identity: VerifiedIdentity, token: Substring) -> String {
        if let jti = identity.claims["jti"]?.stringValue, !jti.isEmpty { return "jti:" + jti }
        return "sha256:" + SHA256.hash(data: Array(token.utf8)).map { $0 < 16 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }

    func isRevoked(_ identity: VerifiedIdentity, token: Substring) -> Bool {
        let snapshot = current.load(ordering: .acquiring).snapshot
        guard !snapshot.isEmpty else { return false }
        if let subject = identity.subject,
            let before = snapshot.subjects[SubjectKey(provider: identity.providerName, subject: subject)],
            (identity.claims["iat"]?.integerValue ?? .min) < before
        {
            return true
        }
        return !snapshot.tokens.isEmpty && snapshot.tokens[Self.tokenKey(identity, token: token)] != nil
    }

    func revokeToken(_ identity: VerifiedIdentity, token: Substring, now: Int64) {
        update(now: now) { $0.tokens[Self.tokenKey(identity, token: token)] = identity.expiry }
    }

    /// Every token of this subject issued before `now` is rejected from now on.
    func revokeSubject(_ identity: VerifiedIdentity, now: Int64) {
        guard let subject = identity.subject else { return }
        update(now: now) { $0.subjects[SubjectKey(provider: identity.providerName, subject: subject)] = now }
    }

    private func update(now: Int64, _ change: (inout Snapshot) -> Void) {
        writeLock.withLock {
            var snapshot = current.load(ordering: .acquiring).snapshot
            snapshot.tokens = snapshot.tokens.filter { $0.value > now }  // expired tokens need no entry
            change(&snapshot)
            current.store(Box(snapshot), ordering: .releasing)
        }
    }
}
