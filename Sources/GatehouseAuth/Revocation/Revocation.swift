import GatehouseSyntax
import GatehouseConfig

/// One sign-out, as it is applied, stored and shared between replicas; and, kept and shared the same way, an MCP
/// session's binding to the identity that made it (docs/reference.md §17.4).
package enum Revocation: Sendable, Hashable {
    /// One token, by its `jti` (`jti:…`) or its SHA-256 (`sha256:…`), until its `exp`.
    case token(key: String, expiresAt: Int64)
    /// Every token of this provider's subject issued (`iat`) before `issuedBefore` (Unix seconds).
    case subject(provider: String, subject: String, issuedBefore: Int64)
    /// Every token of this provider carrying this `sid` claim issued (`iat`) at or before `issuedBefore`: the session the
    /// provider ended (OpenID Connect Back-Channel Logout, docs/reference.md §7.3). Kept like a subject entry.
    case providerSession(provider: String, sid: String, issuedBefore: Int64)
    /// An MCP session id bound to its owner (`MCPSessionOwner`) until `expiresAt`: a request of another identity with it
    /// is refused. The first owner keeps it; the owner's later use moves `expiresAt` on.
    case session(id: String, owner: String, expiresAt: Int64)
    /// The owner ended the session (a `DELETE` the server accepted): the binding is dropped.
    case sessionEnded(id: String, owner: String)

    /// How long a token entry is kept past the token's `exp`: a token verifies until `exp + leeway`,
    /// and `leeway` is at most `VerificationSettings.maxLeeway`, whatever a reload sets
    /// (docs/security.md R09). Every store and replica drops entries by this rule only.
    static let retentionAfterExpiry = VerificationSettings.maxLeeway.components.seconds

    /// Token entries whose `exp` is before this can be dropped: their tokens verify nowhere any more.
    static func droppableBefore(now: Int64) -> Int64 { now - retentionAfterExpiry }

    /// Whether the entry can still reject a token. Subject entries never lapse: a token issued
    /// before them may carry any `exp`, so they are kept (one row per subject, updated in place).
    func isLive(now: Int64) -> Bool {
        switch self {
        case .token(_, let expiresAt): expiresAt >= Self.droppableBefore(now: now)
        case .subject, .providerSession, .sessionEnded: true
        case .session(_, _, let expiresAt): expiresAt >= now
        }
    }
}

// MARK: - Notification payload (PostgreSQL NOTIFY between replicas)

extension Revocation {
    /// PostgreSQL caps a NOTIFY payload below 8000 bytes; a larger entry is announced as a
    /// reload instead (every replica then re-reads the table).
    static let maxPayloadBytes = 7900

    /// `{"token":"jti:…","exp":1700000000}` or `{"provider":"…","sub":"…","before":1700000000}`.
    var notificationPayload: String {
        let json: JSONValue = switch self {
        case .token(let key, let expiresAt):
            .object(["token": .string(key), "exp": .number(String(expiresAt))])
        case .subject(let provider, let subject, let issuedBefore):
            .object(["provider": .string(provider), "sub": .string(subject), "before": .number(String(issuedBefore))])
        case .providerSession(let provider, let sid, let issuedBefore):
            .object(["provider": .string(provider), "sid": .string(sid), "before": .number(String(issuedBefore))])
        case .session(let id, let owner, let expiresAt):
            .object(["session": .string(id), "owner": .string(owner), "exp": .number(String(expiresAt))])
        case .sessionEnded(let id, let owner):
            .object(["session_ended": .string(id), "owner": .string(owner)])
        }
        let text = json.compactJSON
        return text.utf8.count <= Self.maxPayloadBytes ? text : Self.reloadPayload
    }

    static let reloadPayload = "{\"reload\":true}"

    /// The entry a notification announces; nil for a reload request or anything unreadable.
    package init?(notificationPayload payload: String) {
        guard let object = (try? StrictJSON.parse(Array(payload.utf8)))?.objectValue else { return nil }
        if let id = object["session"]?.stringValue, let owner = object["owner"]?.stringValue, let expiresAt = object["exp"]?.integerValue {
            self = .session(id: id, owner: owner, expiresAt: expiresAt)
        } else if let id = object["session_ended"]?.stringValue, let owner = object["owner"]?.stringValue {
            self = .sessionEnded(id: id, owner: owner)
        } else if let key = object["token"]?.stringValue, let expiresAt = object["exp"]?.integerValue, !key.isEmpty {
            self = .token(key: key, expiresAt: expiresAt)
        } else if let provider = object["provider"]?.stringValue, let sid = object["sid"]?.stringValue,
            let issuedBefore = object["before"]?.integerValue
        {
            self = .providerSession(provider: provider, sid: sid, issuedBefore: issuedBefore)
        } else if let provider = object["provider"]?.stringValue, let subject = object["sub"]?.stringValue,
            let issuedBefore = object["before"]?.integerValue
        {
            self = .subject(provider: provider, subject: subject, issuedBefore: issuedBefore)
        } else {
            return nil
        }
    }
}
