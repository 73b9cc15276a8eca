import Foundation
import GatehouseTokens

/// Why a `kid` its provider's key set lacks is known not to be the provider's: the only grounds for
/// 401 `unknown_key` (docs/reference.md §3.8). Without one of them, a token signed by a key the
/// provider has just begun to publish could be refused, and its holder told to sign in again; such a
/// token gets a refetch, or 503 `keys_unavailable` when no fetch may start now.
public enum UnknownKeyEvidence: Sendable, Equatable {
    /// The current set lists this `kid`, with a key Gatehouse skipped (the reason): no fetch makes it usable.
    case unusable(String)
    /// An earlier key set listed this `kid` and a later fetch dropped it: the provider retired the key.
    case retired
    /// The token was issued (`iat`) more than the leeway before the current set was listed, and a
    /// provider publishes a key before, or when, it first signs with it.
    case issuedBeforeListing
    /// A fetch that began after the request arrived, or was in flight when it arrived, did not list it.
    case absentFromFetchSinceArrival

    /// The evidence the provider's current key set gives by itself, without a fetch.
    ///
    /// - Parameters:
    ///   - keyID: the token's `kid`; a token without one has no `kid` to have been retired.
    ///   - issuedAt: the token's `iat` (unverified: a forger who backdates it earns the 401 it would get anyway).
    static func inSnapshot(_ snapshot: KeySnapshot, keyID: String?, issuedAt: Int64?, leeway: Int64) -> Self? {
        if let keyID {
            if let skipped = snapshot.keySet.skipped.first(where: { $0.keyID.map { $0.utf8.elementsEqual(keyID.utf8) } ?? false }) {
                return .unusable(skipped.reason)
            }
            if snapshot.retiredKeyIDs.contains(where: { $0.utf8.elementsEqual(keyID.utf8) }) { return .retired }
        }
        if let issuedAt, let listedAsOf = snapshot.listedAsOf,
           Double(issuedAt) + Double(leeway) < listedAsOf.timeIntervalSince1970 {
            return .issuedBeforeListing
        }
        return nil
    }

    /// The failure log's `detail`.
    package var detail: String {
        switch self {
        case .unusable(let reason): "the provider's key with this kid cannot be used: \(reason)"
        case .retired: "no key with this kid: the provider has retired it"
        case .issuedBeforeListing: "no key with this kid: the token was issued before the provider's keys were last listed, without it"
        case .absentFromFetchSinceArrival: "no key with this kid, even after a refetch"
        }
    }
}
