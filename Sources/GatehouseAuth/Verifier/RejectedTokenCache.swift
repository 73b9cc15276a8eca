package import NIOCore
import NIOConcurrencyHelpers
package import GatehouseTokens
package import GatehouseVocabulary

/// Tokens whose signature did not verify, so a client repeating a forged or corrupted token costs
/// a lookup, not a signature check: failing is never the expensive path. An entry holds only while
/// the provider's key set is the one it failed against (any refetch may bring a key that verifies
/// it). Other failures are not kept: time claims (`nbf`, `exp`) change their verdict as time goes.
///
/// Entries are found by the token key's hash (`TokenKey.digest`, seeded per process, which every token is hashed with
/// anyway) and hold the token's SHA-256, which a hit must match: a token that is not in the cache, every new valid token
/// among them, costs no SHA-256; two tokens of one hash cannot be taken for each other (the later replaces the earlier);
/// and an entry costs 32 bytes whatever the token's size.
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

    private struct Entry: Sendable {
        var token: SHA256Words
        var rejection: Rejection
    }

    private let capacity: Int
    private let entries: NIOLockedValueBox<BoundedMap<Int, Entry>>

    init(capacity: Int) {
        self.capacity = capacity
        self.entries = NIOLockedValueBox(BoundedMap(capacity: capacity))
    }

    /// `token`: the token's own key (its bytes).
    func lookup(_ token: TokenKey) -> Rejection? {
        guard capacity > 0, let entry = entries.withLockedValue({ $0.value(for: token.digest) }) else { return nil }
        return entry.token == token.sha256Words ? entry.rejection : nil
    }

    /// Entries held now (at most `capacity`).
    package var count: Int { entries.withLockedValue { $0.count } }

    package func insert(_ token: TokenKey, _ rejection: Rejection) {
        guard capacity > 0 else { return }
        let entry = Entry(token: token.sha256Words, rejection: rejection)
        entries.withLockedValue { $0.insert(entry, for: token.digest) }
    }
}
