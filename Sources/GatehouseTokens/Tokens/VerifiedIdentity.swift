package import NIOCore
public import GatehouseSyntax

/// A token that passed every check: who, by which provider, with which claims. What does not change once verified is
/// one object every copy shares (a request copies its identity several times: its decision, its admission, the
/// upstream head), so a copy counts one reference instead of one per member.
public struct VerifiedIdentity: Sendable {
    private let core: Core
    /// This request's check verified the signature, or introspected the token (a cache miss); false for a copy taken
    /// from a cache. For its trace.
    package var verifiedNow = false

    private final class Core: Sendable {
        let providerIndex: Int
        let providerName: String
        let claims: [String: JSONValue]
        let encodedPayload: String
        let keyID: String?
        let expiry: Int64
        let revocationKey: String?
        let keysFetchedAt: NIODeadline?
        let assertionSlot: AssertionSlot

        init(
            providerIndex: Int, providerName: String, claims: [String: JSONValue], encodedPayload: String, keyID: String?, expiry: Int64,
            revocationKey: String?, keysFetchedAt: NIODeadline?, assertionSlot: AssertionSlot
        ) {
            self.providerIndex = providerIndex
            self.providerName = providerName
            self.claims = claims
            self.encodedPayload = encodedPayload
            self.keyID = keyID
            self.expiry = expiry
            self.revocationKey = revocationKey
            self.keysFetchedAt = keysFetchedAt
            self.assertionSlot = assertionSlot
        }
    }

    public var providerIndex: Int { core.providerIndex }
    public var providerName: String { core.providerName }
    public var claims: [String: JSONValue] { core.claims }
    /// The payload segment as the issuer signed it: forwarded as `X-Auth-Claims`.
    public var encodedPayload: String { core.encodedPayload }
    public var keyID: String? { core.keyID }
    /// `exp` in Unix seconds; a cached entry is never used past it.
    public var expiry: Int64 { core.expiry }
    /// The key a sign-out revokes this token under (`RevocationList.tokenKey`), computed once when
    /// the token is verified so cached requests do not hash the token again.
    package var revocationKey: String? { core.revocationKey }
    /// When the key set it was verified against was fetched: a cached identity is used only while
    /// that set is still the provider's current one (a key replaced under the same `kid`, or removed,
    /// makes the token verify again).
    package var keysFetchedAt: NIODeadline? { core.keysFetchedAt }
    /// The identity assertion signed for this verification (`AssertionSigner`), kept as long as the identity is.
    package var assertionSlot: AssertionSlot { core.assertionSlot }

    package init(
        providerIndex: Int, providerName: String, claims: [String: JSONValue], encodedPayload: String, keyID: String?, expiry: Int64,
        revocationKey: String? = nil, keysFetchedAt: NIODeadline? = nil, verifiedNow: Bool = false, assertionSlot: AssertionSlot = AssertionSlot()
    ) {
        core = Core(
            providerIndex: providerIndex, providerName: providerName, claims: claims, encodedPayload: encodedPayload, keyID: keyID,
            expiry: expiry, revocationKey: revocationKey, keysFetchedAt: keysFetchedAt, assertionSlot: assertionSlot)
        self.verifiedNow = verifiedNow
    }

    public var subject: String? { claims["sub"]?.stringValue }

    /// The same identity presenting other claims (enrichment); the signed payload is unchanged.
    package func with(claims: [String: JSONValue]) -> VerifiedIdentity {
        VerifiedIdentity(
            providerIndex: providerIndex, providerName: providerName, claims: claims, encodedPayload: encodedPayload, keyID: keyID,
            expiry: expiry, revocationKey: revocationKey, keysFetchedAt: keysFetchedAt, verifiedNow: verifiedNow, assertionSlot: assertionSlot)
    }
}
