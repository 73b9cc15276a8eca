import Foundation
import Testing
import GatehouseTokenFixtures
import GatehouseConfig

/// `[ext_authz]` (docs/reference.md §14): read with its defaults, an authorizer only without `[upstream]`, every
/// mistake reported at its key path.
struct ConfigurationExtAuthzTests {
    typealias Case = ConfigurationValidationTests.Case

    @Test func theTableIsReadWithItsDefaults() throws {
        #expect(try Configuration.parse(toml: ConfigFixture.minimal()).extAuthz == nil)
        let configuration = try Configuration.parse(toml: ConfigFixture.minimal("""
            [ext_authz]
            address = "127.0.0.1:9191"

            """))
        let settings = try #require(configuration.extAuthz)
        #expect(settings.address == SocketAddressSetting(host: "127.0.0.1", port: 9191))
        #expect(settings.httpPathPrefix == "/")
        #expect(settings.tlsCertificatePath == nil && settings.clientCAPath == nil)
        #expect(configuration.servesClientPort)

        let full = try Configuration.parse(toml: ConfigFixture.minimal("""
            [ext_authz]
            address = "0.0.0.0:9191"
            http_path_prefix = "/ext-authz"
            tls_cert = "/etc/tls.crt"
            tls_key = "/etc/tls.key"
            client_ca = "/etc/envoy-ca.pem"
            forward_token = false

            """))
        #expect(settings.forwardToken == nil, "unset: as [upstream] forward_token")
        #expect(full.extAuthz?.forwardToken == false)
        #expect(full.extAuthz?.httpPathPrefix == "/ext-authz")
        #expect(full.extAuthz?.clientCAPath == "/etc/envoy-ca.pem")
        #expect(full.summary.hasSuffix(", ext_authz 0.0.0.0:9191 (TLS)"), "\(full.summary)")
    }

    /// Without `[upstream]`, `[ext_authz]` makes Gatehouse an authorizer only: no client port; without either, the
    /// missing `[upstream]` is reported as before.
    @Test func withoutAnUpstreamGatehouseIsAnAuthorizerOnly() throws {
        let configuration = try Configuration.parse(toml: ConfigFixture.jwksProvider + """
            [ext_authz]
            address = "127.0.0.1:9191"

            [listen]
            address = "127.0.0.1:9191"

            """)
        #expect(!configuration.servesClientPort)
        #expect(configuration.summary.contains("an authorizer only"), "\(configuration.summary)")
        let issues = ConfigFixture.issues(ConfigFixture.jwksProvider)
        #expect(issues.contains { $0.keyPath == "upstream" && $0.message.contains("[ext_authz]") }, "\(issues)")
    }

    @Test(arguments: [
        Case(ConfigFixture.minimal("[ext_authz]\nhttp_path_prefix = \"/x\"\n"), "ext_authz.address", "required"),
        Case(ConfigFixture.minimal("[ext_authz]\naddress = \"127.0.0.1:9191\"\nhttp_path_prefix = \"x\"\n"), "ext_authz.http_path_prefix",
             "starting with /"),
        Case(ConfigFixture.minimal("[ext_authz]\naddress = \"127.0.0.1:9191\"\ntls_cert = \"/a\"\n"), "ext_authz.tls_key", "required"),
        Case(ConfigFixture.minimal("[ext_authz]\naddress = \"127.0.0.1:9191\"\nclient_ca = \"/a\"\n"), "ext_authz.client_ca", "needs tls_cert"),
        Case(ConfigFixture.minimal("[ext_authz]\naddress = \"127.0.0.1:9191\"\nport = 1\n"), "ext_authz.port", "unknown"),
        Case(ConfigFixture.minimal("[ext_authz]\naddress = \"127.0.0.1:9191\"\nforward_token = \"no\"\n"), "ext_authz.forward_token", "boolean"),
        Case(ConfigFixture.minimal("[ext_authz]\naddress = \"0.0.0.0:9901\"\n"), "ext_authz.address", "admin.address"),
        Case(ConfigFixture.minimal("[ext_authz]\naddress = \"127.0.0.1:8080\"\n"), "ext_authz.address", "listen.address"),
    ])
    func mistakesAreReportedAtTheirKey(testCase: Case) {
        ConfigurationValidationTests.expectOnlyIssue(testCase)
    }
}
