import Crypto
import Foundation
import NIOCore
import Testing
import GatehouseTokenFixtures
@testable import GatehouseTokens
@testable import GatehouseAuth

/// The evidence a key set gives that a `kid` it lacks is not its provider's (docs/reference.md §3.8; docs/security.md
/// J11, K17, K18), and how retired kids are carried from one set to the next.
struct UnknownKeyEvidenceTests {
    private typealias F = TokenFixtures

    private func keySet(_ kids: [String], skipped: [String] = []) throws -> JWKSet {
        let keys = kids.map { F.ecJWK(raw: Array(P256.Signing.PrivateKey().publicKey.rawRepresentation), crv: "P-256", kid: $0) }
            + skipped.map { #"{"kty":"oct","kid":"\#($0)","k":"c2VjcmV0"}"# }
        return try JWKSet.parse(F.keySet(keys), allowedAlgorithms: F.allAlgorithms)
    }

    private func snapshot(_ set: JWKSet, listedAsOf: Date? = nil, retired: [String] = []) -> KeySnapshot {
        KeySnapshot(keySet: set, fetchedAt: .now(), fetchedAtDate: Date(), listedAsOf: listedAsOf, retiredKeyIDs: retired)
    }

    @Test func aRetiredKidIsEvidenceByExactBytes() throws {
        let current = snapshot(try keySet(["new"]), retired: ["old"])
        #expect(UnknownKeyEvidence.inSnapshot(current, keyID: "old", issuedAt: nil, leeway: 60) == .retired)
        #expect(UnknownKeyEvidence.inSnapshot(current, keyID: "OLD", issuedAt: nil, leeway: 60) == nil)
        #expect(UnknownKeyEvidence.inSnapshot(current, keyID: nil, issuedAt: nil, leeway: 60) == nil)
    }

    @Test func aTokenIssuedBeforeTheListingBeyondTheLeewayIsEvidence() throws {
        let listed = Date(timeIntervalSince1970: 1_800_000_000)
        let current = snapshot(try keySet(["k"]), listedAsOf: listed)
        #expect(UnknownKeyEvidence.inSnapshot(current, keyID: "x", issuedAt: 1_800_000_000 - 61, leeway: 60) == .issuedBeforeListing)
        // Within the leeway, at, or after the listing: the key may have been published after the fetch began.
        for issuedAt: Int64 in [1_800_000_000 - 60, 1_800_000_000, 1_800_000_100] {
            #expect(UnknownKeyEvidence.inSnapshot(current, keyID: "x", issuedAt: issuedAt, leeway: 60) == nil)
        }
        // No listing time (a persisted set): no evidence from `iat`.
        #expect(UnknownKeyEvidence.inSnapshot(snapshot(try keySet(["k"])), keyID: "x", issuedAt: 0, leeway: 60) == nil)
    }

    @Test func aListedKidWhoseKeyWasSkippedIsEvidence() throws {
        let current = snapshot(try keySet(["k"], skipped: ["hmac"]))
        guard case .unusable(let reason)? = UnknownKeyEvidence.inSnapshot(current, keyID: "hmac", issuedAt: nil, leeway: 60) else {
            Issue.record("a skipped key's kid gave no evidence")
            return
        }
        #expect(!reason.isEmpty)
    }

    @Test func retiredKidsAreWhatALaterSetDropsNewestFirstAndBounded() throws {
        let first = snapshot(try keySet(["a", "b", "c"]))
        let second = snapshot(try keySet(["b", "c", "d"]), retired: first.retiredKeyIDs(after: try keySet(["b", "c", "d"])))
        #expect(second.retiredKeyIDs == ["a"])
        // "a" published again is no longer retired; "b" and "c" dropped now come first.
        let third = second.retiredKeyIDs(after: try keySet(["a", "d"]))
        #expect(third == ["b", "c"])
        // A kid still listed, though its key is now skipped, is not retired.
        #expect(second.retiredKeyIDs(after: try keySet(["d"], skipped: ["b", "c"])) == ["a"])
        let many = snapshot(try keySet(["x"]), retired: (0..<100).map { "old-\($0)" })
        let bounded = many.retiredKeyIDs(after: try keySet(["y"]))
        #expect(bounded.count == KeySnapshot.retiredLimit && bounded.first == "x" && bounded[1] == "old-0")
    }
}
