import NIOCore
import NIOConcurrencyHelpers
import GatehouseTokens

/// Tokens whose signature did not verify, so a client repeating a forged or corrupted token costs
/// a lookup, not a signature check: failing is never the expensive path. An entry holds only while
/// the provider's key set is the one it failed against (any refetch may bring a key that verifies
/// it). Other failures are not kept: time claims (`nbf`, `exp`) change their verdict as time goes.
final class RejectedTokenCache: Sendable {
    struct Rejection: Sendable {
        var failure: AuthFailure
        var provider: Int
        /// The key set it failed against (its fetch time identifies it).
        var keysFetchedAt: NIODeadline
    }

    private let capacity: Int
    private let entries: NIOLockedValueBox<TokenKeyedGenerations<Rejection>>

    init(capacity: Int) {
        self.capacity = capacity
        self.entries = NIOLockedValueBox(TokenKeyedGenerations(capacity: capacity))
    }

    func lookup(_ key: TokenKey) -> Rejection? {
        guard capacity > 0 else { return nil }
        return entries.withLockedValue { $0.value(for: key) }
    }

    /// Entries held now (at most `capacity`).
    var count: Int { entries.withLockedValue { $0.count } }

    func insert(_ key: TokenKey, _ rejection: Rejection) {
        guard capacity > 0 else { return }
        entries.withLockedValue { $0.insert(rejection, for: key) }
    }
}
