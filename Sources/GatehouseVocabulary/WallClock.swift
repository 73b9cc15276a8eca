public import Foundation

/// Where the decision path reads the time of day: the system's, or one a test moves (a token's `exp` passed without
/// waiting for it). Read once per decision and handed on as a value to the verifier, the gatekeeper and the core.
public struct WallClock: Sendable {
    private let read: @Sendable () -> Date

    public init(_ read: @escaping @Sendable () -> Date) {
        self.read = read
    }

    public static let system = WallClock { Date() }

    public func now() -> Date { read() }

    /// Seconds since the epoch, whole (a JWT NumericDate).
    public func seconds() -> Int64 { Int64(read().timeIntervalSince1970) }
}
