import Foundation

extension TestEnvironment {
    /// A configuration file for this environment's upstream and JWKS server (one `test` provider,
    /// ephemeral ports), for tests that reload from a file; they append their own tables.
    var minimalTOML: String {
        """
        [listen]
        address = "127.0.0.1:0"
        [admin]
        address = "127.0.0.1:0"
        [upstream]
        url = "http://127.0.0.1:\(upstream.port)"
        [[provider]]
        name = "test"
        type = "jwks"
        issuer = "\(Claims.issuer)"
        jwks_uri = "\(jwks.jwksURL.absoluteString)"
        audiences = ["\(Claims.audience)"]

        """
    }
}
