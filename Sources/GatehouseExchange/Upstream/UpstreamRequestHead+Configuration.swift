package import GatehouseConfig
import GatehousePolicy

/// The head's rules as one configuration says them: the identity header names a client may not send (every provider's
/// mappings, `[headers]`, the assertion's header), the mappings per provider, the claims and the token forwarded, the
/// certificate header a trusted proxy may set. The assertion signer is set by its owner (`makeServices`: it counts
/// into metrics).
extension UpstreamRequestHead {
    package init(_ configuration: Configuration) {
        let mappings = configuration.providers.map { $0.headerMappings(globalHeaders: configuration.headers.mappings) }
        let allMappings = mappings.flatMap { $0 } + configuration.headers.mappings
        self.init(
            identityHeaderNames: IdentityHeaderNames(mappings: allMappings, otherNames: configuration.assertion.map { [$0.header] } ?? []),
            headerMappings: mappings,
            forwardClaimsJSON: configuration.headers.forwardClaimsJSON,
            forwardToken: configuration.upstream.forwardToken,
            tokenHeaderName: configuration.verification.tokenHeader,
            forwardedCertificate: ForwardedClientCertificate(configuration.listen))
    }
}
