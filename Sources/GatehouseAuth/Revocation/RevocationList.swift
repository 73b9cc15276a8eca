import Atomics
import Crypto
import NIOConcurrencyHelpers
import GatehouseSyntax
package import GatehouseTokens

/// Signed-out tokens and subjects, checked on every verified request (cached ones included).
///
/// The request path reads an immutable snapshot through one atomic load and skips all work while
/// nothing is revoked. Whatever the store, this is where revocations take effect; the store makes
/// them durable and tells the other replicas.
package final class RevocationList: Sendable {
    package struct Snapshot: Sendable {
        /// Token key (its `jti`, or SHA-256 of the token) -> the token's `exp`.
        package var tokens: [String: Int64] = [:]
        /// Provider + subject -> tokens issued at or before this time (Unix seconds) are revoked.
        var subjects: [SubjectKey: Int64] = [:]
        /// Provider + `sid` -> tokens of that session issued at or before this time (Unix seconds) are revoked.
        var providerSessions: [ProviderSessionKey: Int64] = [:]
        /// MCP session id -> its owner and until when the binding is kept (not sign-outs: `isEmpty` leaves them out).
        var sessions: [String: SessionBinding] = [:]
        package var isEmpty: Bool { tokens.isEmpty && subjects.isEmpty && providerSessions.isEmpty }
    }

    package struct SessionBinding: Sendable, Equatable {
        package var owner: String
        package var expiresAt: Int64
    }

    struct SubjectKey: Hashable, Sendable {
        var provider: String
        var subject: String
    }

    struct ProviderSessionKey: Hashable, Sendable {
        var provider: String
        var sid: String
    }

    package final class Box: AtomicReference, Sendable {
        let snapshot: Snapshot
        /// Nothing is signed out: the request path reads this and nothing else (a copy of the snapshot cost a
        /// reference to each of its tables, issue 57).
        let hasNoSignOuts: Bool
        let hasNoSessions: Bool
        package init(_ snapshot: Snapshot) {
            self.snapshot = snapshot
            self.hasNoSignOuts = snapshot.isEmpty
            self.hasNoSessions = snapshot.sessions.isEmpty
        }
    }

    private let current = ManagedAtomic(Box(Snapshot()))
    /// Writers (sign-outs and store feeds, rare) serialize here and publish a new snapshot.
    private let writeLock = NIOLock()

    var snapshot: Snapshot { current.load(ordering: .acquiring).snapshot }

    package init() {}

    /// The key a token is revoked under (`TokenRevocationKey`): made once per verification and kept in the identity.
    package static func tokenKey(_ identity: VerifiedIdentity, token: Substring) -> String {
        identity.revocationKey
            ?? TokenRevocationKey.make(provider: identity.providerName, claims: identity.claims, tokenDigest: Array(SHA256.hash(data: token.utf8Bytes)))
    }

    func isRevoked(_ identity: VerifiedIdentity, token: Substring) -> Bool {
        let box = current.load(ordering: .acquiring)
        guard !box.hasNoSignOuts else { return false }
        let snapshot = box.snapshot
        if !snapshot.subjects.isEmpty, let subject = identity.subject,
            let before = snapshot.subjects[SubjectKey(provider: identity.providerName, subject: subject)],
            (identity.claim("iat")?.integerValue ?? .min) <= before  // issued in the cut-off second counts as before
        {
            return true
        }
        if !snapshot.providerSessions.isEmpty, let sid = identity.claim("sid")?.stringValue,
            let before = snapshot.providerSessions[ProviderSessionKey(provider: identity.providerName, sid: sid)],
            (identity.claim("iat")?.integerValue ?? .min) <= before
        {
            return true
        }
        return !snapshot.tokens.isEmpty && snapshot.tokens[Self.tokenKey(identity, token: token)] != nil
    }

    /// The entry that signs out the presented token until its `exp`.
    package static func tokenRevocation(_ identity: VerifiedIdentity, token: Substring) -> Revocation {
        .token(key: tokenKey(identity, token: token), expiresAt: identity.expiry)
    }

    /// The entry that signs out every token of the subject issued before `now`; nil without a subject.
    package static func subjectRevocation(_ identity: VerifiedIdentity, now: Int64) -> Revocation? {
        identity.subject.map { .subject(provider: identity.providerName, subject: $0, issuedBefore: now) }
    }

    /// The binding of an MCP session id, while it is kept.
    package func session(_ id: String, now: Int64) -> SessionBinding? {
        let box = current.load(ordering: .acquiring)
        guard !box.hasNoSessions, let binding = box.snapshot.sessions[id], binding.expiresAt >= now else { return nil }
        return binding
    }

    /// Applies revocations (idempotent: a subject keeps its latest cut-off) and drops token entries
    /// past their retention (`Revocation.retentionAfterExpiry` after `exp`). A session keeps its first live owner;
    /// expired bindings are dropped by `removeExpired` only (a bind, frequent, does not walk them all).
    ///
    /// `fromStore`: what the shared store holds (its load, its notifications), the authority on a session's owner. A
    /// replica binds a session it had not yet heard of at once, to its first caller; when another replica's binding
    /// reaches the store first, the store keeps that one and tells every replica, and this replica's own binding
    /// gives way to it (else the replicas would disagree on the owner until the binding expires: docs/security.md M15).
    package func apply(_ revocations: some Sequence<Revocation>, now: Int64, sweepingSessions: Bool = false, fromStore: Bool = false) {
        writeLock.withLock {
            var snapshot = current.load(ordering: .acquiring).snapshot
            let droppableBefore = Revocation.droppableBefore(now: now)
            snapshot.tokens = snapshot.tokens.filter { $0.value >= droppableBefore }
            if sweepingSessions { snapshot.sessions = snapshot.sessions.filter { $0.value.expiresAt >= now } }
            for revocation in revocations where revocation.isLive(now: now) {
                switch revocation {
                case .token(let key, let expiresAt):
                    snapshot.tokens[key] = max(snapshot.tokens[key] ?? .min, expiresAt)
                case .subject(let provider, let subject, let issuedBefore):
                    let key = SubjectKey(provider: provider, subject: subject)
                    snapshot.subjects[key] = max(snapshot.subjects[key] ?? .min, issuedBefore)
                case .providerSession(let provider, let sid, let issuedBefore):
                    let key = ProviderSessionKey(provider: provider, sid: sid)
                    snapshot.providerSessions[key] = max(snapshot.providerSessions[key] ?? .min, issuedBefore)
                case .session(let id, let owner, let expiresAt):
                    if !fromStore, let bound = snapshot.sessions[id], bound.owner != owner, bound.expiresAt >= now { continue }
                    let kept = snapshot.sessions[id].map { $0.owner == owner ? $0.expiresAt : .min } ?? .min
                    snapshot.sessions[id] = SessionBinding(owner: owner, expiresAt: max(kept, expiresAt))
                case .sessionEnded(let id, let owner):
                    if snapshot.sessions[id]?.owner == owner { snapshot.sessions[id] = nil }
                }
            }
            current.store(Box(snapshot), ordering: .releasing)
        }
    }

    package func apply(_ revocation: Revocation, now: Int64, fromStore: Bool = false) {
        apply(CollectionOfOne(revocation), now: now, fromStore: fromStore)
    }

    /// Drops token entries whose tokens can no longer verify, even with the largest leeway.
    func removeExpired(now: Int64) { apply(EmptyCollection(), now: now, sweepingSessions: true) }
}
