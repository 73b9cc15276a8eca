import Crypto
import NIOConcurrencyHelpers

/// The `jti`s of the DPoP proofs this replica accepted, each kept until its proof's `iat` leaves the
/// acceptance window (after which the proof is refused as too old anyway), in bounded memory.
///
/// Entries are 16 bytes of SHA-256 over the proof key's thumbprint and the `jti`: another client
/// cannot use up a `jti` this one will send, and a kilobyte of `jti` costs 16 bytes. They sit in sets
/// by the few seconds they expire in, so expiry drops a whole set and never scans.
package final class DPoPReplayCache: Sendable {
    package struct Key: Hashable, Sendable {
        package let high: UInt64
        package let low: UInt64

        package init(thumbprint: String, identifier: String) {
            let digest = Array(SHA256.hash(data: Array(thumbprint.utf8) + [0] + Array(identifier.utf8)))
            high = digest[0..<8].reduce(0) { $0 << 8 | UInt64($1) }
            low = digest[8..<16].reduce(0) { $0 << 8 | UInt64($1) }
        }

        /// The text form the shared store keys rows by.
        package var hex: String {
            [high, low].map { word in
                let digits = String(word, radix: 16)
                return String(repeating: "0", count: 16 - digits.count) + digits
            }.joined()
        }
    }

    package enum Claim: Equatable {
        case fresh
        case replayed
        /// The cache holds `capacity` live entries: the proof cannot be checked for replay.
        case full
    }

    /// Seconds per expiry set.
    package static let granularity: Int64 = 8
    package let capacity: Int
    private let state = NIOLockedValueBox(State())

    package struct State {
        package var sets: [Int64: Set<Key>] = [:]
        package var count = 0
    }

    package init(capacity: Int) {
        self.capacity = capacity
    }

    package var count: Int { state.withLockedValue { $0.count } }

    /// Records the proof unless it was seen; `expiresAt` is when its `iat` leaves the window.
    package func claim(_ key: Key, expiresAt: Int64, now: Int64) -> Claim {
        let slot = expiresAt / Self.granularity + 1
        return state.withLockedValue { state in
            state.dropExpired(now: now)
            for (setSlot, keys) in state.sets where setSlot * Self.granularity > now && keys.contains(key) { return .replayed }
            guard state.count < capacity else { return .full }
            state.sets[slot, default: []].insert(key)
            state.count += 1
            return .fresh
        }
    }
}

extension DPoPReplayCache.State {
    /// Sets whose every entry expired: a set at `slot` holds entries expiring before `slot * granularity`.
    mutating func dropExpired(now: Int64) {
        for (slot, keys) in sets where slot * DPoPReplayCache.granularity <= now {
            count -= keys.count
            sets[slot] = nil
        }
    }
}
