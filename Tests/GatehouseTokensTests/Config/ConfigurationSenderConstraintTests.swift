import Foundation
import Testing
import GatehouseTokenFixtures
import GatehouseConfig

/// `[dpop]`, `dpop` on providers and routes, and the `[listen]` keys of certificate-bound tokens: decoded with
/// their defaults, every mistake reported at its key path.
struct ConfigurationSenderConstraintTests {
    typealias Case = ConfigurationValidationTests.Case

    @Test func everyKeyIsReadWithItsDefaults() throws {
        let defaults = try Configuration.parse(toml: ConfigFixture.minimal())
        #expect(defaults.dpop == DPoPSettings())
        #expect(defaults.providers[0].dpop == .allowed)
        #expect(defaults.providers[0].tokenTypes == nil)
        #expect(try Configuration.parse(toml: ConfigFixture.minimal("token_typ = [\"AT+JWT\", \"jwt\"]\n")).providers[0].tokenTypes
            == ["at+jwt", "jwt"])
        #expect(defaults.listen.clientCAPath == nil)

        let toml = ConfigFixture.minimal("dpop = \"required\"\n") + """
            [dpop]
            proof_lifetime = "30s"
            external_url = "https://api.example.com/"
            nonce = true
            nonce_secret = "env:GATEHOUSE_DPOP_NONCE_SECRET"
            nonce_lifetime = "2m"
            replay_cache_size = 5000

            [[route]]
            prefix = "/legacy"
            dpop = "off"
            """
        let configuration = try Configuration.parse(toml: toml)
        #expect(configuration.providers[0].dpop == .required)
        #expect(configuration.routes[0].dpop == .off)
        #expect(configuration.dpop.proofLifetime == .seconds(30))
        #expect(configuration.dpop.externalURL == "https://api.example.com")
        #expect(configuration.dpop.nonce)
        #expect(configuration.dpop.nonceSecret == .environment("GATEHOUSE_DPOP_NONCE_SECRET"))
        #expect(configuration.dpop.nonceLifetime == .seconds(120))
        #expect(configuration.dpop.replayCacheSize == 5000)

        let listen = try Configuration.parse(toml: """
            [listen]
            tls_cert = "/etc/tls.crt"
            tls_key = "/etc/tls.key"
            client_ca = "/etc/clients.pem"
            client_auth = "require"
            client_cert_header = "x-forwarded-client-cert"
            client_cert_header_format = "xfcc"
            trusted_proxies = ["10.0.0.0/8", "::1"]
            """ + "\n" + ConfigFixture.minimal())
        #expect(listen.listen.clientCAPath == "/etc/clients.pem")
        #expect(listen.listen.clientAuth == .require)
        #expect(listen.listen.clientCertificateHeader == "x-forwarded-client-cert")
        #expect(listen.listen.clientCertificateHeaderFormat == .xfcc)
        #expect(listen.listen.trustedProxies.map(\.description) == ["10.0.0.0/8", "::1"])
    }

    @Test(arguments: [
        Case(ConfigFixture.minimal("dpop = \"maybe\"\n"), "provider[0].dpop", "must be one of"),
        Case(ConfigurationValidationTests.route("prefix = \"/\"\ndpop = \"yes\""), "route[0].dpop", "must be one of"),
        Case(ConfigurationValidationTests.route("prefix = \"/\"\nauth = \"public\"\ndpop = \"required\""), "route[0].dpop",
             "has no effect on a public route"),
        Case(ConfigurationValidationTests.section("[dpop]\nproof_lifetime = \"0s\""), "dpop.proof_lifetime", "must be from 1s to 10m"),
        Case(ConfigurationValidationTests.section("[dpop]\nexternal_url = \"https://api.example.com/v1\""), "dpop.external_url", "no path"),
        Case(ConfigurationValidationTests.section("[dpop]\nexternal_url = \"api.example.com\""), "dpop.external_url", "http"),
        Case(ConfigurationValidationTests.section("[dpop]\nnonce_secret = \"x\""), "dpop.nonce_secret", "has no effect without nonce = true"),
        Case(ConfigurationValidationTests.section("[dpop]\nnonce = true\nnonce_secret = \"a\"\nnonce_secret_file = \"/f\""),
             "dpop.nonce_secret_file", "give either nonce_secret or nonce_secret_file"),
        Case(ConfigurationValidationTests.section("[dpop]\nnonce = true\nnonce_lifetime = \"5s\""), "dpop.nonce_lifetime", "from 10s to 24h"),
        Case(ConfigurationValidationTests.section("[dpop]\nreplay_cache_size = 10"), "dpop.replay_cache_size", "1000"),
        Case(ConfigurationValidationTests.section("[dpop]\nnonces = true"), "dpop.nonces", "unknown key"),
        Case("[listen]\nclient_ca = \"/ca.pem\"\n" + ConfigFixture.minimal(), "listen.client_ca", "needs tls_cert and tls_key"),
        Case("[listen]\nclient_auth = \"require\"\n" + ConfigFixture.minimal(), "listen.client_auth", "has no effect without client_ca"),
        Case("[listen]\nclient_cert_header = \"x-client-cert\"\n" + ConfigFixture.minimal(), "listen.client_cert_header",
             "needs trusted_proxies"),
        Case("[listen]\nclient_cert_header = \"bad header\"\ntrusted_proxies = [\"::1\"]\n" + ConfigFixture.minimal(),
             "listen.client_cert_header", "is not a valid header name"),
        Case("[listen]\nclient_cert_header = \"x\"\ntrusted_proxies = [\"10.0.0.0/33\"]\n" + ConfigFixture.minimal(),
             "listen.trusted_proxies", "is not an IP address or CIDR range"),
        Case("[listen]\ntrusted_proxies = [\"10.0.0.1\"]\n" + ConfigFixture.minimal(), "listen.trusted_proxies",
             "has no effect without client_cert_header"),
        // RFC 9068 token_typ (oidc and jwks only).
        Case(ConfigFixture.minimal("token_typ = []\n"), "provider[0].token_typ", "at least one type"),
        Case(ConfigFixture.minimal("token_typ = [\"application/at+jwt\"]\n"), "provider[0].token_typ", "without application/"),
        Case(ConfigurationValidationTests.provider("name = \"g\"\ntype = \"google\"\naudiences = [\"a\"]\ntoken_typ = [\"at+jwt\"]"),
             "provider[0].token_typ", "not"),
    ])
    func mistakesAreReportedAtTheirKey(testCase: Case) { ConfigurationValidationTests.expectOnlyIssue(testCase) }

    @Test func addressRangesMatchByPrefix() throws {
        let range = try #require(AddressRange("10.1.0.0/16"))
        #expect(range.contains("10.1.255.7") && !range.contains("10.2.0.1") && !range.contains("::1"))
        #expect(try #require(AddressRange("::1")).contains("::1"))
        #expect(try #require(AddressRange("127.0.0.1")).contains("::ffff:127.0.0.1"))
        #expect(try #require(AddressRange("2001:db8::/32")).contains("2001:db8:1::5"))
        #expect(AddressRange("10.0.0.0/08") == nil && AddressRange("host.example") == nil && AddressRange("10.0.0.0/") == nil)
    }
}
