import Foundation

extension TestEnvironment {
    /// A configuration file for this environment's upstream and JWKS server (one `test` provider,
    /// ephemeral ports), for tests that reload from a file; they append their own tables.
    var minimalTOML: String {
        "[listen]\naddress = \"127.0.0.1:0\"\n[admin]\naddress = \"127.0.0.1:0\"\n" + Contract.toml(upstreamPort: upstream.port, jwks: jwks)
    }
}
