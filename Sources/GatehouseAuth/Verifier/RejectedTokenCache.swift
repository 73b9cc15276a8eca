package import NIOCore
import NIOConcurrencyHelpers
package import GatehouseTokens
package import GatehouseVocabulary

/// Tokens whose signature did not verify, so a client repeating a forged or corrupted token costs
/// a lookup, not a signature check: failing is never the expensive path. An entry holds only while
/// the provider's key set is the one it failed against (any refetch may bring a key that verifies
/// it). Other failures are not kept: time claims (`nbf`, `exp`) change their verdict as time goes.
package final class RejectedTokenCache: Sendable {
    package struct Rejection: Sendable {
        package var failure: AuthFailure
        package var provider: Int
        /// The key set it failed against (its fetch time identifies it).
        package var keysFetchedAt: NIODeadline

        package init(failure: AuthFailure, provider: Int, keysFetchedAt: NIODeadline) {
            self.failure = failure
            self.provider = provider
            self.keysFetchedAt = keysFetchedAt
        }
    }

    private let capacity: Int
    private let entries: NIOLockedValueBox<BoundedTokenMap<Rejection>>

    init(capacity: Int) {
        self.capacity = capacity
        self.entries = NIOLockedValueBox(BoundedTokenMap(capacity: capacity))
    }

    func lookup(_ key: TokenKey) -> Rejection? {
        guard capacity > 0 else { return nil }
        return entries.withLockedValue { $0.value(for: key) }
    }

    /// Entries held now (at most `capacity`).
    package var count: Int { entries.withLockedValue { $0.count } }

    package func insert(_ key: TokenKey, _ rejection: Rejection) {
        guard capacity > 0 else { return }
        entries.withLockedValue { $0.insert(rejection, for: key) }
    }
}
