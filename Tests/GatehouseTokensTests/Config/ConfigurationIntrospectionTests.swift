import Foundation
import Testing
import GatehouseTokenFixtures
import GatehouseConfig

/// `type = "introspection"` providers: their keys with defaults and every mistake at its key path, and the
/// rule that an opaque token can never be sprayed across identity providers.
struct ConfigurationIntrospectionTests {
    typealias Case = ConfigurationValidationTests.Case

    static func provider(_ body: String, name: String = "opaque") -> String {
        "[[provider]]\nname = \"\(name)\"\ntype = \"introspection\"\n" + body + "\n"
    }

    static let minimal = "introspection_endpoint = \"https://idp.example.com/introspect\"\nclient_id = \"rs\""

    @Test func keysAreReadWithTheirDefaults() throws {
        let configuration = try Configuration.parse(toml: ConfigFixture.minimal() + Self.provider(Self.minimal))
        let settings = configuration.providers[1].introspection
        #expect(settings.endpoint?.absoluteString == "https://idp.example.com/introspect")
        #expect(settings.clientID == "rs" && settings.clientSecret == nil && settings.clientAuth == .basic)
        #expect(settings.cacheTTL == .seconds(60) && settings.negativeCacheTTL == .seconds(5))
        #expect(settings.cacheMaxEntries == 10000 && settings.maxInFlight == 32 && settings.tokenPrefix == nil)

        let full = try Configuration.parse(toml: ConfigFixture.minimal() + Self.provider("""
            issuer = "https://idp.example.com/tenant"
            client_id = "rs"
            client_secret = "env:IDP_SECRET"
            client_auth = "post"
            audiences = ["api"]
            cache_ttl = "30s"
            negative_cache_ttl = "2s"
            cache_max_entries = 500
            max_in_flight = 8
            max_calls_per_second = 250
            token_prefix = "ya29."
            """))
        let parsed = full.providers[1]
        #expect(parsed.issuer == "https://idp.example.com/tenant" && parsed.audiences == ["api"])
        #expect(parsed.introspection.endpoint == nil && parsed.introspection.clientSecret == .environment("IDP_SECRET"))
        #expect(parsed.introspection.clientAuth == .post && parsed.introspection.cacheTTL == .seconds(30))
        #expect(parsed.introspection.maxInFlight == 8 && parsed.introspection.tokenPrefix == "ya29.")
        #expect(parsed.introspection.maxCallsPerSecond == 250 && settings.maxCallsPerSecond == 1000)
    }

    @Test(arguments: [
        Case(ConfigFixture.minimal() + provider("client_id = \"rs\""), "provider[1]", "needs introspection_endpoint, or issuer"),
        Case(ConfigFixture.minimal() + provider("introspection_endpoint = \"https://x/i\""), "provider[1].client_id", "required"),
        Case(ConfigFixture.minimal() + provider(minimal + "\nclient_secret = \"a\"\nclient_secret_file = \"/f\""),
             "provider[1].client_secret_file", "not both"),
        Case(ConfigFixture.minimal() + provider(minimal + "\nclient_auth = \"jwt\""), "provider[1].client_auth", "must be one of"),
        Case(ConfigFixture.minimal() + provider(minimal + "\nmax_in_flight = 0"), "provider[1].max_in_flight", "1"),
        Case(ConfigFixture.minimal() + provider(minimal + "\ncache_ttl = \"0s\""), "provider[1].cache_ttl", "greater than 0s"),
        Case(ConfigFixture.minimal() + provider(minimal + "\njwks_uri = \"https://x/k\""), "provider[1].jwks_uri", "no keys"),
        Case(ConfigFixture.minimal() + provider(minimal + "\ntoken_typ = [\"at+jwt\"]"), "provider[1].token_typ", "not"),
        Case(ConfigFixture.minimal() + provider("introspection_endpoint = \"ftp://x/i\"\nclient_id = \"rs\""),
             "provider[1].introspection_endpoint", "http"),
        // Two introspection providers a token could go to, without prefixes to tell them apart.
        Case(ConfigFixture.minimal() + provider(minimal, name: "a") + provider(minimal, name: "b"), "provider", "each needs a token_prefix"),
        Case(ConfigFixture.minimal() + provider(minimal + "\ntoken_prefix = \"ya\"", name: "a")
             + provider(minimal + "\ntoken_prefix = \"ya29.\"", name: "b"), "provider", "also matches"),
    ])
    func mistakesAreReportedAtTheirKey(testCase: Case) { ConfigurationValidationTests.expectOnlyIssue(testCase) }

    @Test func twoProvidersWithDistinctPrefixesOrOnePerRouteAreFine() throws {
        _ = try Configuration.parse(toml: ConfigFixture.minimal() + Self.provider(Self.minimal + "\ntoken_prefix = \"ya29.\"", name: "a")
            + Self.provider(Self.minimal + "\ntoken_prefix = \"ory_at_\"", name: "b"))
    }
}

/// `type = "entra"` and `type = "kubernetes"` providers, and the route keys they feed (`roles`, `service_accounts`).
struct ConfigurationTenantAndClusterTests {
    typealias Case = ConfigurationValidationTests.Case

    static func provider(_ type: String, _ body: String) -> String {
        ConfigFixture.minimal() + "[[provider]]\nname = \"p\"\ntype = \"\(type)\"\n" + body + "\n"
    }

    @Test func keysAreRead() throws {
        let entra = try Configuration.parse(toml: Self.provider("entra", """
            audiences = ["api://orders"]
            tenants = ["72F988BF-86F1-41AF-91AB-2D7CD011DB47"]
            accept_v1 = true
            """)).providers[1]
        #expect(entra.tenants == ["72f988bf-86f1-41af-91ab-2d7cd011db47"] && entra.acceptV1)
        let cluster = try Configuration.parse(toml: Self.provider("kubernetes", """
            audiences = ["orders"]
            api_server = "https://10.0.0.1:443"
            ca_file = "/etc/ca.crt"
            token_file = "/etc/token"
            token_review = true
            """) + "[[route]]\nprefix = \"/p\"\nservice_accounts = [\"payments/*\", \"billing/invoicer\"]\nroles = [\"Admin\"]\n")
        #expect(cluster.providers[1].apiServer?.absoluteString == "https://10.0.0.1:443" && cluster.providers[1].tokenFile == "/etc/token")
        #expect(cluster.providers[1].tokenReview)
        #expect(cluster.routes[0].serviceAccounts == ["payments/*", "billing/invoicer"] && cluster.routes[0].roles == ["Admin"])
    }

    @Test(arguments: [
        Case(provider("entra", "audiences = [\"a\"]"), "provider[1].tenants", "required"),
        Case(provider("entra", "tenants = [\"*\"]"), "provider[1].audiences", "required"),
        Case(provider("entra", "audiences = [\"a\"]\ntenants = [\"contoso.com\"]"), "provider[1].tenants", "is not a tenant id"),
        Case(provider("entra", "audiences = [\"a\"]\ntenants = [\"*\", \"72f988bf-86f1-41af-91ab-2d7cd011db47\"]"), "provider[1].tenants",
             "stands alone"),
        Case(provider("entra", "audiences = [\"a\"]\ntenants = [\"*\"]\nissuer = \"https://login.example/x\""), "provider[1].issuer",
             "{tenantid}"),
        Case(provider("kubernetes", "api_server = \"https://10.0.0.1\""), "provider[1].audiences", "required"),
        Case(provider("kubernetes", "audiences = [\"a\"]\napi_server = \"10.0.0.1\""), "provider[1].api_server", "http"),
        Case(provider("kubernetes", "audiences = [\"a\"]\ntenants = [\"*\"]"), "provider[1].tenants", "not"),
        Case(ConfigFixture.minimal() + "[[route]]\nprefix = \"/p\"\nservice_accounts = [\"payments\"]\n", "route[0].service_accounts",
             "namespace/name"),
        Case(ConfigFixture.minimal() + "[[route]]\nprefix = \"/p\"\nauth = \"public\"\nroles = [\"x\"]\n", "route[0].roles", "public route"),
    ])
    func mistakesAreReportedAtTheirKey(testCase: Case) { ConfigurationValidationTests.expectOnlyIssue(testCase) }
}
