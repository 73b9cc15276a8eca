import Synchronization
package import GatehouseSyntax

/// Where a verified token keeps the assertion signed for it. The slot lives in the `VerifiedIdentity`, so an
/// assertion is kept exactly as long as the verification it vouches for: it is bounded by the verified-token
/// cache (and a connection's last token), and gone when they let go of the identity.
///
/// Every verified token makes one, so it is one allocation: the lock is stored inline (`Mutex`).
package final class AssertionSlot: Sendable {
    private let signed = Mutex<SignedAssertion?>(nil)

    init() {}

    package var current: SignedAssertion? { signed.withLock { $0 } }

    package func store(_ assertion: SignedAssertion) {
        signed.withLock { $0 = assertion }
    }
}

/// One signed assertion and what it was signed with.
package struct SignedAssertion: Sendable {
    /// The compact JWS.
    package let value: String
    /// The signer's `generation`: a reload that swaps the signing key (or changes the content) signs again at once.
    package let signer: UInt64
    /// Unix seconds from which it is signed again: half its lifetime; never when its `exp` is the token's own
    /// (signing again would not make it last longer).
    package let refreshAt: Int64
    /// The values of the configured `claims` it carries (userinfo enrichment may change them for the same token).
    package let copied: [JSONValue?]

    package init(value: String, signer: UInt64, refreshAt: Int64, copied: [JSONValue?]) {
        self.value = value
        self.signer = signer
        self.refreshAt = refreshAt
        self.copied = copied
    }
}
