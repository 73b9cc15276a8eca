import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import SQLiteNIO

/// `store = "sqlite:/path/file.db"`: durable on one machine. Every sign-out is committed before it
/// is answered; the file is read at start. Replicas on other machines do not see it.
final class SQLiteRevocationStore: RevocationStore {
    let path: String
    private let logger: Logger
    private let connection = NIOLockedValueBox<SQLiteConnection?>(nil)

    init(path: String, logger: Logger) {
        self.path = path
        self.logger = logger
    }

    var location: String { "sqlite:" + path }

    func follow(_ event: @escaping @Sendable (RevocationFeedEvent) -> Void) async throws {
        let opened = try await SQLiteConnection.open(storage: .file(path: path), logger: logger)
        do {
            for statement in Self.schema { try await opened.query(statement, []) { _ in } }
            let rows = NIOLockedValueBox<[Revocation]>([])
            try await opened.query("SELECT token_key, expires_at FROM gatehouse_revoked_tokens", []) { row in
                if let key = row.column("token_key")?.string, let expiresAt = row.column("expires_at")?.integer {
                    rows.withLockedValue { $0.append(.token(key: key, expiresAt: Int64(expiresAt))) }
                }
            }
            try await opened.query("SELECT provider, subject, issued_before FROM gatehouse_revoked_subjects", []) { row in
                if let provider = row.column("provider")?.string, let subject = row.column("subject")?.string,
                    let before = row.column("issued_before")?.integer
                {
                    rows.withLockedValue { $0.append(.subject(provider: provider, subject: subject, issuedBefore: Int64(before))) }
                }
            }
            try await opened.query("SELECT provider, sid, issued_before FROM gatehouse_revoked_provider_sessions", []) { row in
                if let provider = row.column("provider")?.string, let sid = row.column("sid")?.string,
                    let before = row.column("issued_before")?.integer
                {
                    rows.withLockedValue { $0.append(.providerSession(provider: provider, sid: sid, issuedBefore: Int64(before))) }
                }
            }
            try await opened.query(
                "SELECT session_id, owner, expires_at FROM gatehouse_mcp_sessions WHERE expires_at >= ?1", [.integer(Int(RevocationService.now()))]
            ) { row in
                if let id = row.column("session_id")?.string, let owner = row.column("owner")?.string, let expiresAt = row.column("expires_at")?.integer {
                    rows.withLockedValue { $0.append(.session(id: id, owner: owner, expiresAt: Int64(expiresAt))) }
                }
            }
            connection.withLockedValue { $0 = opened }
            event(.loaded(rows.withLockedValue { $0 }))
            while !Task.isCancelled { try await Task.sleep(for: .seconds(3600)) }
        } catch {
            await close(opened)
            throw error
        }
        await close(opened)
    }

    /// Through the future API: the async one gives up when the task is cancelled (at shutdown),
    /// which would leave the file open.
    private func close(_ opened: SQLiteConnection) async {
        connection.withLockedValue { $0 = nil }
        let closing: EventLoopFuture<Void> = opened.close()
        try? await closing.get()
    }

    /// Version 1. `IF NOT EXISTS` keeps a restart idempotent; later versions add statements after these.
    private static let schema = [
        "PRAGMA journal_mode = WAL",
        "PRAGMA synchronous = FULL",
        // Replicas on one machine share the file: a writer waits for the other's commit instead of failing.
        "PRAGMA busy_timeout = 2000",
        "CREATE TABLE IF NOT EXISTS gatehouse_schema_version (version INTEGER PRIMARY KEY)",
        "INSERT OR IGNORE INTO gatehouse_schema_version (version) VALUES (1)",
        "CREATE TABLE IF NOT EXISTS gatehouse_revoked_tokens (token_key TEXT PRIMARY KEY, expires_at INTEGER NOT NULL)",
        """
        CREATE TABLE IF NOT EXISTS gatehouse_revoked_subjects (provider TEXT NOT NULL, subject TEXT NOT NULL,
            issued_before INTEGER NOT NULL, PRIMARY KEY (provider, subject))
        """,
        // Version 2: DPoP proofs seen by the replicas sharing this file.
        "INSERT OR IGNORE INTO gatehouse_schema_version (version) VALUES (2)",
        "CREATE TABLE IF NOT EXISTS gatehouse_dpop_proofs (proof_key TEXT PRIMARY KEY, expires_at INTEGER NOT NULL)",
        // Version 3: MCP sessions bound to the identity that made them.
        "INSERT OR IGNORE INTO gatehouse_schema_version (version) VALUES (3)",
        "CREATE TABLE IF NOT EXISTS gatehouse_mcp_sessions (session_id TEXT PRIMARY KEY, owner TEXT NOT NULL, expires_at INTEGER NOT NULL)",
        // Version 4: provider sessions ended by a back-channel logout.
        "INSERT OR IGNORE INTO gatehouse_schema_version (version) VALUES (4)",
        """
        CREATE TABLE IF NOT EXISTS gatehouse_revoked_provider_sessions (provider TEXT NOT NULL, sid TEXT NOT NULL,
            issued_before INTEGER NOT NULL, PRIMARY KEY (provider, sid))
        """,
    ]

    func save(_ revocation: Revocation) async throws {
        guard let connection = connection.withLockedValue({ $0 }) else { throw RevocationStoreError.notConnected }
        switch revocation {
        case .token(let key, let expiresAt):
            try await connection.query(
                """
                INSERT INTO gatehouse_revoked_tokens (token_key, expires_at) VALUES (?1, ?2)
                ON CONFLICT (token_key) DO UPDATE SET expires_at = max(expires_at, excluded.expires_at)
                """, [.text(key), .integer(Int(expiresAt))]) { _ in }
        case .subject(let provider, let subject, let issuedBefore):
            try await connection.query(
                """
                INSERT INTO gatehouse_revoked_subjects (provider, subject, issued_before) VALUES (?1, ?2, ?3)
                ON CONFLICT (provider, subject) DO UPDATE SET issued_before = max(issued_before, excluded.issued_before)
                """, [.text(provider), .text(subject), .integer(Int(issuedBefore))]) { _ in }
        case .providerSession(let provider, let sid, let issuedBefore):
            try await connection.query(
                """
                INSERT INTO gatehouse_revoked_provider_sessions (provider, sid, issued_before) VALUES (?1, ?2, ?3)
                ON CONFLICT (provider, sid) DO UPDATE SET issued_before = max(issued_before, excluded.issued_before)
                """, [.text(provider), .text(sid), .integer(Int(issuedBefore))]) { _ in }
        case .session(let id, let owner, let expiresAt):
            // The first owner keeps the id while its binding lasts.
            try await connection.query(
                """
                INSERT INTO gatehouse_mcp_sessions (session_id, owner, expires_at) VALUES (?1, ?2, ?3)
                ON CONFLICT (session_id) DO UPDATE
                    SET expires_at = CASE WHEN owner = excluded.owner THEN max(expires_at, excluded.expires_at) ELSE excluded.expires_at END,
                        owner = excluded.owner
                    WHERE owner = excluded.owner OR expires_at < ?4
                """, [.text(id), .text(owner), .integer(Int(expiresAt)), .integer(Int(RevocationService.now()))]) { _ in }
        case .sessionEnded(let id, let owner):
            try await connection.query(
                "DELETE FROM gatehouse_mcp_sessions WHERE session_id = ?1 AND owner = ?2", [.text(id), .text(owner)]) { _ in }
        }
    }

    /// One statement per batch of up to 500: one commit (and one fsync) for all of them.
    func claimProofs(_ proofs: [ProofClaim]) async throws -> Set<String> {
        guard let connection = connection.withLockedValue({ $0 }) else { throw RevocationStoreError.notConnected }
        let fresh = NIOLockedValueBox(Set<String>())
        var start = 0
        while start < proofs.count {
            let batch = proofs[start..<min(start + 500, proofs.count)]
            start += batch.count
            let rows = batch.indices.map { "(?\(2 * ($0 - batch.startIndex) + 1), ?\(2 * ($0 - batch.startIndex) + 2))" }
            let bindings = batch.flatMap { [SQLiteData.text($0.key), .integer(Int($0.expiresAt))] }
            try await connection.query(
                "INSERT INTO gatehouse_dpop_proofs (proof_key, expires_at) VALUES \(rows.joined(separator: ", "))"
                    + " ON CONFLICT DO NOTHING RETURNING proof_key", bindings) { row in
                if let key = row.column("proof_key")?.string { fresh.withLockedValue { _ = $0.insert(key) } }
            }
        }
        return fresh.withLockedValue { $0 }
    }

    func deleteProofEntries(expiringBefore cutoff: Int64) async throws {
        guard let connection = connection.withLockedValue({ $0 }) else { throw RevocationStoreError.notConnected }
        try await connection.query("DELETE FROM gatehouse_dpop_proofs WHERE expires_at < ?1", [.integer(Int(cutoff))]) { _ in }
    }

    func deleteTokenEntries(expiringBefore cutoff: Int64) async throws {
        guard let connection = connection.withLockedValue({ $0 }) else { throw RevocationStoreError.notConnected }
        try await connection.query("DELETE FROM gatehouse_revoked_tokens WHERE expires_at < ?1", [.integer(Int(cutoff))]) { _ in }
        try await connection.query("DELETE FROM gatehouse_mcp_sessions WHERE expires_at < ?1", [.integer(Int(cutoff))]) { _ in }
    }
}
