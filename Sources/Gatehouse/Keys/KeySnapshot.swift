public import Foundation
public import NIOCore

/// One provider's keys as of one successful fetch: immutable, replaced whole by the refresher.
public struct KeySnapshot: Sendable {
    public let keySet: JWKSet
    /// Monotonic time of the fetch, for staleness.
    public let fetchedAt: NIODeadline
    /// Wall-clock time of the fetch, for `/readyz` and logs.
    public let fetchedAtDate: Date

    public init(keySet: JWKSet, fetchedAt: NIODeadline, fetchedAtDate: Date) {
        self.keySet = keySet
        self.fetchedAt = fetchedAt
        self.fetchedAtDate = fetchedAtDate
    }
}

/// What `/readyz` reports of one provider's keys.
public struct ProviderKeyStatus: Sendable {
    public var provider: String
    public var keyCount: Int
    public var usable: Bool
    public var lastFetch: Date?
    public var lastError: String?
}
