public import Foundation

/// What `/readyz` reports of one provider's keys.
public struct ProviderKeyStatus: Sendable {
    public var provider: String
    public var keyCount: Int
    public var usable: Bool
    public var lastFetch: Date?
    public var lastError: String?

    package init(provider: String, keyCount: Int, usable: Bool, lastFetch: Date? = nil, lastError: String? = nil) {
        self.provider = provider
        self.keyCount = keyCount
        self.usable = usable
        self.lastFetch = lastFetch
        self.lastError = lastError
    }
}
