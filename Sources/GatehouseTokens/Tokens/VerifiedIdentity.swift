package import NIOCore
public import GatehouseSyntax

/// A token that passed every check: who, by which provider, with which claims.
public struct VerifiedIdentity: Sendable {
    public let providerIndex: Int
    public let providerName: String
    public let claims: [String: JSONValue]
    /// The payload segment as the issuer signed it: forwarded as `X-Auth-Claims`.
    public let encodedPayload: String
    public let keyID: String?
    /// `exp` in Unix seconds; a cached entry is never used past it.
    public let expiry: Int64
    /// The key a sign-out revokes this token under (`RevocationList.tokenKey`), computed once when
    /// the token is verified so cached requests do not hash the token again.
    package var revocationKey: String?
    /// When the key set it was verified against was fetched: a cached identity is used only while
    /// that set is still the provider's current one (a key replaced under the same `kid`, or removed,
    /// makes the token verify again).
    package var keysFetchedAt: NIODeadline?
    /// This request's check verified the signature, or introspected the token (a cache miss); false for a copy taken
    /// from a cache. For its trace.
    package var verifiedNow = false
    /// The identity assertion signed for this verification (`AssertionSigner`), kept as long as the identity is.
    package var assertionSlot = AssertionSlot()

    package init(
        providerIndex: Int, providerName: String, claims: [String: JSONValue], encodedPayload: String, keyID: String?, expiry: Int64,
        revocationKey: String? = nil, keysFetchedAt: NIODeadline? = nil, verifiedNow: Bool = false, assertionSlot: AssertionSlot = AssertionSlot()
    ) {
        self.providerIndex = providerIndex
        self.providerName = providerName
        self.claims = claims
        self.encodedPayload = encodedPayload
        self.keyID = keyID
        self.expiry = expiry
        self.revocationKey = revocationKey
        self.keysFetchedAt = keysFetchedAt
        self.verifiedNow = verifiedNow
        self.assertionSlot = assertionSlot
    }

    public var subject: String? { claims["sub"]?.stringValue }

    /// The same identity presenting other claims (enrichment); the signed payload is unchanged.
    package func with(claims: [String: JSONValue]) -> VerifiedIdentity {
        VerifiedIdentity(
            providerIndex: providerIndex, providerName: providerName, claims: claims, encodedPayload: encodedPayload, keyID: keyID,
            expiry: expiry, revocationKey: revocationKey, keysFetchedAt: keysFetchedAt, verifiedNow: verifiedNow, assertionSlot: assertionSlot)
    }
}
