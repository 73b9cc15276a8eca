package import GatehouseTokens

/// Who an MCP session is bound to (docs/reference.md §17.4): the identity's provider and subject. A user who steps up
/// (a new token with more scopes) keeps their session; another user of the same provider does not get it.
package enum MCPSessionOwner {
    /// `provider` LF `sub`: provider names have no line feed, so no two identities share an owner.
    package static func of(_ identity: VerifiedIdentity) -> String {
        identity.providerName + "\n" + (identity.subject ?? "")
    }
}
