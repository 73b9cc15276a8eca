import NIOConcurrencyHelpers
import GatehouseSyntax

/// Where a verified token keeps the assertion signed for it. The slot lives in the `VerifiedIdentity`, so an
/// assertion is kept exactly as long as the verification it vouches for: it is bounded by the verified-token
/// cache (and a connection's last token), and gone when they let go of the identity.
final class AssertionSlot: Sendable {
    private let signed = NIOLockedValueBox<SignedAssertion?>(nil)

    init() {}

    var current: SignedAssertion? { signed.withLockedValue { $0 } }

    func store(_ assertion: SignedAssertion) {
        signed.withLockedValue { $0 = assertion }
    }
}

/// One signed assertion and what it was signed with.
struct SignedAssertion: Sendable {
    /// The compact JWS.
    let value: String
    /// The signer's `generation`: a reload that swaps the signing key (or changes the content) signs again at once.
    let signer: UInt64
    /// Unix seconds from which it is signed again: half its lifetime; never when its `exp` is the token's own
    /// (signing again would not make it last longer).
    let refreshAt: Int64
    /// The values of the configured `claims` it carries (userinfo enrichment may change them for the same token).
    let copied: [JSONValue?]
}
