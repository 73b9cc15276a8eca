import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import PostgresNIO
import GatehouseConfig

/// `store = "postgres://user@host:port/db"`: shared by every replica of a fleet.
///
/// One connection per replica: it LISTENs on `gatehouse_revocations`, then reads both tables, then
/// applies each NOTIFY as it comes. A sign-out inserts its row and notifies in one statement (NOTIFY
/// is transactional: no replica hears of a row that was not committed). When the connection breaks
/// the caller reconnects; every reconnection re-reads the tables, so nothing sent meanwhile is lost.
final class PostgresRevocationStore: RevocationStore {
    static let channel = "gatehouse_revocations"

    private let configuration: PostgresConnection.Configuration
    private let logger: Logger
    private let connection = NIOLockedValueBox<PostgresConnection?>(nil)
    private let connectionIDs = NIOLockedValueBox(0)
    let location: String

    init(url: URL, password: String?, logger: Logger) throws {
        guard let host = url.host, !host.isEmpty else { throw RevocationStoreError(description: "postgres URL without a host") }
        let database = url.path.split(separator: "/").first.map(String.init)
        var configuration = PostgresConnection.Configuration(
            host: host, port: url.port ?? 5432, username: url.user ?? "gatehouse",
            password: password ?? url.password, database: database ?? "gatehouse", tls: try Self.tls(url))
        configuration.options.connectTimeout = .seconds(5)
        self.configuration = configuration
        self.logger = logger
        self.location = "postgres://\(host):\(url.port ?? 5432)/\(database ?? "gatehouse")"
    }

    /// libpq's `sslmode`: absent or `prefer` (TLS when offered, unverified), `disable`, `require`
    /// (unverified), `verify-full` (the system's CA store, host name checked).
    private static func tls(_ url: URL) throws -> PostgresConnection.Configuration.TLS {
        let mode = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems?.first { $0.name == "sslmode" }?.value ?? "prefer"
        var unverified = TLSConfiguration.makeClientConfiguration()
        unverified.certificateVerification = .none
        switch mode {
        case "disable": return .disable
        case "prefer": return .prefer(try NIOSSLContext(configuration: unverified))
        case "require": return .require(try NIOSSLContext(configuration: unverified))
        case "verify-full": return .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
        default: throw RevocationStoreError(description: "sslmode \(mode) is not one of disable, prefer, require, verify-full")
        }
    }

    func follow(_ event: @escaping @Sendable (RevocationFeedEvent) -> Void) async throws {
        let id = connectionIDs.withLockedValue { $0 += 1; return $0 }
        let opened = try await PostgresConnection.connect(configuration: configuration, id: id, logger: logger)
        do {
            try await migrate(opened)
            try await opened.listen(on: Self.channel) { notifications in
                // Listening before reading: a sign-out committed in between is in the read or in a notification.
                event(.loaded(try await readAll(opened)))
                connection.withLockedValue { $0 = opened }
                for try await notification in notifications {
                    if let revocation = Revocation(notificationPayload: notification.payload) {
                        event(.received(revocation))
                    } else {
                        event(.loaded(try await readAll(opened)))
                    }
                }
            }
            throw RevocationStoreError(description: "PostgreSQL connection closed")
        } catch {
            connection.withLockedValue { if $0 === opened { $0 = nil } }
            try? await opened.close()
            throw error
        }
    }

    func save(_ revocation: Revocation) async throws {
        guard let connection = connection.withLockedValue({ $0 }) else { throw RevocationStoreError.notConnected }
        let payload = revocation.notificationPayload
        switch revocation {
        case .token(let key, let expiresAt):
            try await connection.query("""
                WITH saved AS (
                    INSERT INTO gatehouse_revoked_tokens (token_key, expires_at) VALUES (\(key), \(expiresAt))
                    ON CONFLICT (token_key) DO UPDATE
                        SET expires_at = GREATEST(gatehouse_revoked_tokens.expires_at, EXCLUDED.expires_at)
                    RETURNING 1)
                SELECT pg_notify(\(Self.channel), \(payload)) FROM saved
                """, logger: logger)
        case .subject(let provider, let subject, let issuedBefore):
            try await connection.query("""
                WITH saved AS (
                    INSERT INTO gatehouse_revoked_subjects (provider, subject, issued_before)
                    VALUES (\(provider), \(subject), \(issuedBefore))
                    ON CONFLICT (provider, subject) DO UPDATE
                        SET issued_before = GREATEST(gatehouse_revoked_subjects.issued_before, EXCLUDED.issued_before)
                    RETURNING 1)
                SELECT pg_notify(\(Self.channel), \(payload)) FROM saved
                """, logger: logger)
        case .providerSession(let provider, let sid, let issuedBefore):
            try await connection.query("""
                WITH saved AS (
                    INSERT INTO gatehouse_revoked_provider_sessions (provider, sid, issued_before)
                    VALUES (\(provider), \(sid), \(issuedBefore))
                    ON CONFLICT (provider, sid) DO UPDATE
                        SET issued_before = GREATEST(gatehouse_revoked_provider_sessions.issued_before, EXCLUDED.issued_before)
                    RETURNING 1)
                SELECT pg_notify(\(Self.channel), \(payload)) FROM saved
                """, logger: logger)
        case .session(let id, let owner, let expiresAt):
            // The first owner keeps the id: another identity's binding changes nothing and tells no replica.
            try await connection.query("""
                WITH saved AS (
                    INSERT INTO gatehouse_mcp_sessions (session_id, owner, expires_at) VALUES (\(id), \(owner), \(expiresAt))
                    ON CONFLICT (session_id) DO UPDATE
                        SET owner = EXCLUDED.owner,
                            expires_at = CASE WHEN gatehouse_mcp_sessions.owner = EXCLUDED.owner
                                THEN GREATEST(gatehouse_mcp_sessions.expires_at, EXCLUDED.expires_at) ELSE EXCLUDED.expires_at END
                        WHERE gatehouse_mcp_sessions.owner = EXCLUDED.owner OR gatehouse_mcp_sessions.expires_at < \(RevocationService.now())
                    RETURNING 1)
                SELECT pg_notify(\(Self.channel), \(payload)) FROM saved
                """, logger: logger)
        case .sessionEnded(let id, let owner):
            try await connection.query("""
                WITH saved AS (
                    DELETE FROM gatehouse_mcp_sessions WHERE session_id = \(id) AND owner = \(owner)
                    RETURNING 1)
                SELECT pg_notify(\(Self.channel), \(payload)) FROM saved
                """, logger: logger)
        }
    }

    func claimProofs(_ proofs: [ProofClaim]) async throws -> Set<String> {
        guard let connection = connection.withLockedValue({ $0 }) else { throw RevocationStoreError.notConnected }
        let keys = proofs.map(\.key)
        let expiries = proofs.map(\.expiresAt)
        let rows = try await connection.query("""
            INSERT INTO gatehouse_dpop_proofs (proof_key, expires_at)
            SELECT * FROM UNNEST(\(keys)::text[], \(expiries)::bigint[])
            ON CONFLICT (proof_key) DO NOTHING
            RETURNING proof_key
            """, logger: logger)
        var fresh = Set<String>()
        for try await key in rows.decode(String.self) { fresh.insert(key) }
        return fresh
    }

    func deleteProofEntries(expiringBefore cutoff: Int64) async throws {
        guard let connection = connection.withLockedValue({ $0 }) else { throw RevocationStoreError.notConnected }
        try await connection.query("DELETE FROM gatehouse_dpop_proofs WHERE expires_at < \(cutoff)", logger: logger)
    }

    func ping() async throws {
        guard let connection = connection.withLockedValue({ $0 }) else { throw RevocationStoreError.notConnected }
        try await connection.query("SELECT 1", logger: logger)
    }

    func abandonConnection() {
        guard let connection = connection.withLockedValue({ $0 }) else { return }
        let closing: EventLoopFuture<Void> = connection.close()
        closing.whenComplete { _ in }
    }

    func deleteTokenEntries(expiringBefore cutoff: Int64) async throws {
        guard let connection = connection.withLockedValue({ $0 }) else { throw RevocationStoreError.notConnected }
        try await connection.query("DELETE FROM gatehouse_revoked_tokens WHERE expires_at < \(cutoff)", logger: logger)
        try await connection.query("DELETE FROM gatehouse_mcp_sessions WHERE expires_at < \(cutoff)", logger: logger)
    }

    private func readAll(_ connection: PostgresConnection) async throws -> [Revocation] {
        var revocations: [Revocation] = []
        let tokens = try await connection.query("SELECT token_key, expires_at FROM gatehouse_revoked_tokens", logger: logger)
        for try await (key, expiresAt) in tokens.decode((String, Int64).self) {
            revocations.append(.token(key: key, expiresAt: expiresAt))
        }
        let subjects = try await connection.query(
            "SELECT provider, subject, issued_before FROM gatehouse_revoked_subjects", logger: logger)
        for try await (provider, subject, issuedBefore) in subjects.decode((String, String, Int64).self) {
            revocations.append(.subject(provider: provider, subject: subject, issuedBefore: issuedBefore))
        }
        let providerSessions = try await connection.query(
            "SELECT provider, sid, issued_before FROM gatehouse_revoked_provider_sessions", logger: logger)
        for try await (provider, sid, issuedBefore) in providerSessions.decode((String, String, Int64).self) {
            revocations.append(.providerSession(provider: provider, sid: sid, issuedBefore: issuedBefore))
        }
        let sessions = try await connection.query(
            "SELECT session_id, owner, expires_at FROM gatehouse_mcp_sessions WHERE expires_at >= \(RevocationService.now())", logger: logger)
        for try await (id, owner, expiresAt) in sessions.decode((String, String, Int64).self) {
            revocations.append(.session(id: id, owner: owner, expiresAt: expiresAt))
        }
        return revocations
    }

    // MARK: - Schema

    /// Versioned migrations: version N is `migrations[N - 1]`. Applied in order under an advisory
    /// lock, so replicas starting together do not race; never edit a shipped version, add one.
    static let migrations: [[PostgresQuery]] = [
        [
            "CREATE TABLE gatehouse_revoked_tokens (token_key text PRIMARY KEY, expires_at bigint NOT NULL)",
            """
            CREATE TABLE gatehouse_revoked_subjects (provider text NOT NULL, subject text NOT NULL,
                issued_before bigint NOT NULL, PRIMARY KEY (provider, subject))
            """,
        ],
        // Version 2: DPoP proofs seen by any replica (RFC 9449 §11.1), kept while their iat is in the window.
        ["CREATE TABLE gatehouse_dpop_proofs (proof_key text PRIMARY KEY, expires_at bigint NOT NULL)"],
        // Version 3: MCP sessions bound to the identity that made them (docs/reference.md §17.4).
        ["CREATE TABLE gatehouse_mcp_sessions (session_id text PRIMARY KEY, owner text NOT NULL, expires_at bigint NOT NULL)"],
        // Version 4: provider sessions ended by a back-channel logout (docs/reference.md §7.3); the logout tokens' `jti`s
        // are kept with the DPoP proofs (the same claim-once rule, under a `logout:` key).
        [
            """
            CREATE TABLE gatehouse_revoked_provider_sessions (provider text NOT NULL, sid text NOT NULL,
                issued_before bigint NOT NULL, PRIMARY KEY (provider, sid))
            """,
        ],
    ]

    /// Any fixed number: the advisory lock all Gatehouse replicas take while migrating.
    private static let migrationLock: Int64 = 0x6761_7465_686f

    private func migrate(_ connection: PostgresConnection) async throws {
        try await connection.query("SELECT pg_advisory_lock(\(Self.migrationLock))", logger: logger)
        do {
            try await connection.query("""
                CREATE TABLE IF NOT EXISTS gatehouse_schema_version (
                    version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())
                """, logger: logger)
            var current = 0
            for try await version in try await connection.query(
                "SELECT COALESCE(MAX(version), 0) FROM gatehouse_schema_version", logger: logger
            ).decode(Int.self) {
                current = version
            }
            for (index, statements) in Self.migrations.enumerated() where index + 1 > current {
                let version = index + 1
                try await connection.query("BEGIN", logger: logger)
                do {
                    for statement in statements { try await connection.query(statement, logger: logger) }
                    try await connection.query("INSERT INTO gatehouse_schema_version (version) VALUES (\(version))", logger: logger)
                    try await connection.query("COMMIT", logger: logger)
                } catch {
                    _ = try? await connection.query("ROLLBACK", logger: logger)
                    throw error
                }
                logger.notice("revocation store: schema migrated", metadata: ["gatehouse.schema_version": "\(version)"])
            }
        } catch {
            _ = try? await connection.query("SELECT pg_advisory_unlock(\(Self.migrationLock))", logger: logger)
            throw error
        }
        try await connection.query("SELECT pg_advisory_unlock(\(Self.migrationLock))", logger: logger)
    }
}
