public import Foundation
public import NIOCore

/// One provider's keys as of one successful fetch: immutable, replaced whole by the refresher.
public struct KeySnapshot: Sendable {
    public let keySet: JWKSet
    /// Monotonic time of the fetch, for staleness.
    public let fetchedAt: NIODeadline
    /// Wall-clock time of the fetch, for `/readyz` and logs.
    public let fetchedAtDate: Date
    /// The latest wall-clock time this key set is known to describe: when the fetch began, less the
    /// response's `Age` (a cache on the way may have held the document). nil when not known (a set
    /// persisted by an earlier run, an unreadable `Age`): then no token's `iat` is judged against it.
    public let listedAsOf: Date?
    /// Key IDs an earlier set of this provider listed and a later fetch dropped, most recently retired
    /// first, at most `retiredLimit`: a token naming one is refused at once (docs/reference.md §3.8).
    public let retiredKeyIDs: [String]

    /// How many retired key IDs a provider remembers (an IdP retires a few keys a year).
    static let retiredLimit = 64

    public init(keySet: JWKSet, fetchedAt: NIODeadline, fetchedAtDate: Date, listedAsOf: Date? = nil, retiredKeyIDs: [String] = []) {
        self.keySet = keySet
        self.fetchedAt = fetchedAt
        self.fetchedAtDate = fetchedAtDate
        self.listedAsOf = listedAsOf
        self.retiredKeyIDs = retiredKeyIDs
    }

    /// The retired key IDs once `next` replaces this set: what this set listed and `next` does not,
    /// then what was retired before and `next` does not list again, newest first, bounded.
    package func retiredKeyIDs(after next: JWKSet) -> [String] {
        let listed = next.listedKeyIDs
        var retired: [String] = []
        var seen = Set<String>()
        for keyID in keySet.keys.compactMap(\.keyID) + retiredKeyIDs where !listed.contains(keyID) && seen.insert(keyID).inserted {
            retired.append(keyID)
            if retired.count == Self.retiredLimit { break }
        }
        return retired
    }
}
