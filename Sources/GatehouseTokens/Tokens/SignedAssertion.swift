package import GatehouseSyntax

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
