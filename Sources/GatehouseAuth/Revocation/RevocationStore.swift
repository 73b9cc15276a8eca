/// Where revocations outlive the process (`[revocation] store`), and how other replicas' reach this one.
package protocol RevocationStore: Sendable {
    /// For logs and `/readyz`: `memory`, `sqlite:/path`, `postgres://host:port/db` (never a password).
    var location: String { get }

    /// Opens the store, then reports every stored revocation (`loaded`), then those other replicas
    /// make (`received`) until the connection breaks (throws) or the task is cancelled.
    /// Until it has called `loaded`, `save` may throw `RevocationStoreError.notConnected`.
    func follow(_ event: @escaping @Sendable (RevocationFeedEvent) -> Void) async throws

    /// Makes one revocation durable and, for a shared store, known to every replica.
    func save(_ revocation: Revocation) async throws

    /// Deletes token entries whose `exp` is before `cutoff` (`Revocation.droppableBefore`): they can no longer reject a token.
    func deleteTokenEntries(expiringBefore cutoff: Int64) async throws

    /// Records DPoP proof keys (`DPoPReplayCache.Key.hex`) until `expiresAt`; returns the keys that were not
    /// there yet. A key another replica recorded first is not returned: that proof is a replay.
    func claimProofs(_ proofs: [ProofClaim]) async throws -> Set<String>

    /// Deletes proof keys whose `expiresAt` has passed.
    func deleteProofEntries(expiringBefore cutoff: Int64) async throws

    /// Checks the connection answers (a silently dropped one would stop NOTIFYs without an error).
    func ping() async throws

    /// Closes the current connection (an operation on it hung): pending operations fail and
    /// `follow` throws, so the caller reconnects.
    func abandonConnection()
}

/// One DPoP proof to record in a shared store.
package struct ProofClaim: Sendable {
    package var key: String
    package var expiresAt: Int64
}

extension RevocationStore {
    package func ping() async throws {}
    package func abandonConnection() {}
}

package enum RevocationFeedEvent: Sendable {
    /// Everything the store holds (at connection, and whenever a full re-read is asked for).
    case loaded([Revocation])
    /// One revocation made by a replica (this one's included: applying twice is harmless).
    case received(Revocation)
}

struct RevocationStoreError: Error, CustomStringConvertible {
    var description: String
    static let notConnected = RevocationStoreError(description: "the revocation store is not connected")
}

/// `store = "memory"`: revocations last until the process stops.
package struct MemoryRevocationStore: RevocationStore {
    package var location: String { "memory" }

    package func follow(_ event: @escaping @Sendable (RevocationFeedEvent) -> Void) async throws {
        event(.loaded([]))
        while !Task.isCancelled { try await Task.sleep(for: .seconds(3600)) }
    }

    package func save(_ revocation: Revocation) async throws {}
    package func deleteTokenEntries(expiringBefore cutoff: Int64) async throws {}
    /// Never asked: the replica's own replay cache is the whole memory (`RevocationService.sharesProofs`).
    package func claimProofs(_ proofs: [ProofClaim]) async throws -> Set<String> { Set(proofs.map(\.key)) }
    package func deleteProofEntries(expiringBefore cutoff: Int64) async throws {}
}
