import Foundation
import Testing
import GatehouseTokenFixtures
import GatehouseConfig

struct ConfigurationValidationTests {
    /// A config whose only problem should be the one at `keyPath`, with a message containing `fragment`.
    struct Case: Sendable, CustomTestStringConvertible {
        let toml: String
        let keyPath: String
        let fragment: String
        init(_ toml: String, _ keyPath: String, _ fragment: String) {
            self.toml = toml
            self.keyPath = keyPath
            self.fragment = fragment
        }
        var testDescription: String { "\(keyPath): \(fragment)" }
    }

    static func section(_ text: String) -> String { ConfigFixture.minimal(text + "\n") }

    static func provider(_ body: String) -> String { ConfigFixture.upstream + "[[provider]]\n" + body + "\n" }

    /// The minimal config with `line` added to its `[upstream]` table.
    static func upstreamSetting(_ line: String) -> String {
        ConfigFixture.minimal().replacingOccurrences(of: "[upstream]\n", with: "[upstream]\n\(line)\n")
    }

    static func route(_ body: String) -> String { section("[[route]]\n" + body) }

    static func expectOnlyIssue(_ testCase: Case) {
        let issues = ConfigFixture.issues(testCase.toml)
        #expect(issues.count == 1, "\(issues)")
        #expect(issues.first?.keyPath == testCase.keyPath, "\(issues)")
        #expect(issues.first?.message.contains(testCase.fragment) == true, "\(issues)")
    }

    @Test(arguments: [
        Case("colour = \"red\"\n" + ConfigFixture.minimal(), "colour", "unknown key"),
        Case(section("[listen]\nadress = \"0.0.0.0:1\""), "listen.adress", "unknown key (did you mean \"address\"?)"),
        Case(section("[admin]\nport = 9901"), "admin.port", "unknown key"),
        Case(route("prefix = \"/a\"\nhosts = [\"orders.example.com:8443\"]"), "route[0].hosts", "without a port"),
        Case(route("prefix = \"/a\"\nhosts = [\"*\"]"), "route[0].hosts", "is not a host name"),
        Case(route("prefix = \"/a\"\nhosts = [\"a.*.example.com\"]"), "route[0].hosts", "is not a host name"),
        Case(route("prefix = \"/a\"\nhosts = []"), "route[0].hosts", "at least one host"),
        Case(route("prefix = \"/a\"\ncontext = {}"), "route[0].context", "at least one pair"),
        // Issue 44's rules and header expressions: checked at load, at their key paths.
        Case(route("prefix = \"/a\"\nwhen = 'claims.tenant =='"), "route[0].when", "unexpected end of expression (at character 17)"),
        Case(route("prefix = \"/a\"\nwhen = 'user.tenant == \"acme\"'"), "route[0].when", "undeclared reference to 'user'"),
        Case(route("prefix = \"/a\"\nwhen = 'size(claims.groups)'"), "route[0].when", "a rule must be bool"),
        Case(route("prefix = \"/a\"\nwhen = 'claims.g.exists(a, claims.g.exists(b, claims.g.exists(c, a == b && b == c)))'"),
             "route[0].when", "its cost has no bound"),
        Case(route("prefix = \"/a\"\nwhen = 'claims.email.matches(\"(a)\\\\1\")'"), "route[0].when", "backtracking"),
        Case(route("prefix = \"/a\"\nauth = \"public\"\nwhen = 'true'"), "route[0].when", "has no effect on a public route"),
        Case(section("[headers]\nX-Org = { expression = 'claims.org +' }"), "headers.X-Org.expression", "unexpected end of expression"),
        Case(section("[headers]\nX-Org = { expression = 'request.host' }"), "headers.X-Org.expression", "a header value reads only claims"),
        Case(section("[headers]\nX-Org = { expression = 'b\"x\"' }"), "headers.X-Org.expression", "a header value is a string"),
        Case(section("[headers]\nX-Org = { expresion = 'claims.org' }"), "headers.X-Org.expresion", "unknown key"),
        Case(route("prefix = \"/a\"\ncontext = { service = 3 }"), "route[0].context.service", "expected a string"),
        Case(route("prefix = \"/a\"\ncontext = { service = \"\" }"), "route[0].context.service", "must not be empty"),
        Case(section("[jwks]\nrefresh = \"5m\""), "jwks.refresh", "unknown key"),
        Case(section("[revocation]\nttl = \"1h\""), "revocation.ttl", "unknown key"),
        Case(ConfigFixture.minimal().replacingOccurrences(of: "url =", with: "url = \"http://x\"\nurll ="), "upstream.urll", "unknown key"),
        Case(provider("name = \"a\"\ntype = \"apple\"\naudiences = [\"a\"]\njwks_url = \"http://x\""), "provider[0].jwks_url",
             "unknown key (did you mean \"jwks_uri\"?)"),
        Case(ConfigFixture.minimal() + "jwks_url = \"http://x\"\n", "provider[0].jwks_url", "unknown key"),
        Case(route("prefix = \"/\"\nauthh = \"public\""), "route[0].authh", "unknown key (did you mean \"auth\"?)"),
        Case(section("[verification.extra]\nx = 1"), "verification.extra", "unknown key"),
    ])
    func unknownKeysAreErrorsEverywhere(testCase: Case) { Self.expectOnlyIssue(testCase) }

    @Test(arguments: [
        Case(section("[listen]\nmax_header_bytes = \"16k\""), "listen.max_header_bytes", "expected an integer, found string"),
        Case(section("[listen]\naddress = 8080"), "listen.address", "expected a string, found integer"),
        Case(section("[listen]\ndrain_timeout = 10"), "listen.drain_timeout", "expected a duration string"),
        Case(section("[verification]\nbypass_cors_preflight = \"yes\""), "verification.bypass_cors_preflight", "expected a boolean"),
        Case(section("[failure_log]\nmax_lines_per_second = 1.5"), "failure_log.max_lines_per_second", "found floating-point number"),
        Case("listen = \"0.0.0.0:80\"\n" + ConfigFixture.minimal(), "listen", "expected a table, found string"),
        Case(ConfigFixture.minimal().replacingOccurrences(of: "[[provider]]", with: "[provider]"),
             "provider", "expected an array of tables ([[provider]]), found table"),
        Case(provider("name = \"a\"\ntype = \"apple\"\naudiences = \"com.example\""), "provider[0].audiences", "expected an array of strings"),
        Case(route("prefix = \"/\"\nscopes = [\"a\", 1]"), "route[0].scopes", "element 1: expected a string, found integer"),
        Case(route("prefix = \"/\"\ngroups = [\"\"]"), "route[0].groups", "element 0: must not be empty"),
        Case(section("[headers]\n\"X-A\" = 1"), "headers.X-A", "expected a claim path string or { expression = '…' }, found integer"),
        Case(section("[headers]\nforward_claims_json = \"no\""), "headers.forward_claims_json", "expected a boolean"),
        Case(ConfigFixture.minimal() + "algorithms = \"RS256\"\n", "provider[0].algorithms", "expected an array of strings, found string"),
        Case("route = [1]\n" + ConfigFixture.minimal(), "route[0]", "expected a table ([[route]]), found integer"),
    ])
    func wrongTypesAreReported(testCase: Case) { Self.expectOnlyIssue(testCase) }

    @Test(arguments: [
        Case(section("[jwks]\nmax_stale = \"3d\""), "jwks.max_stale", "\"3d\" is not a duration"),
        Case(section("[verification]\nleeway = \"-1s\""), "verification.leeway", "is not a duration"),
        Case(section("[listen]\ndrain_timeout = \"1.5s\""), "listen.drain_timeout", "use a whole number and ms, s, m or h"),
        Case(upstreamSetting("connect_timeout = \"2 s\""), "upstream.connect_timeout", "\"2 s\" is not a duration"),
    ])
    func badDurationsAreReported(testCase: Case) { Self.expectOnlyIssue(testCase) }

    @Test(arguments: [
        Case(section("[listen]\nmax_header_bytes = 1023"), "listen.max_header_bytes", "must be between 1024 and 1048576, found 1023"),
        Case(section("[listen]\nmax_header_bytes = 1048577"), "listen.max_header_bytes", "must be between 1024 and 1048576"),
        Case(section("[listen]\ntoken_max_bytes = 255"), "listen.token_max_bytes", "must be between 256 and 1048576"),
        Case(section("[listen]\ntoken_max_bytes = 2000000"), "listen.token_max_bytes", "must be between 256 and 1048576"),
        Case(section("[failure_log]\nmax_lines_per_second = 0"), "failure_log.max_lines_per_second", "must be at least 1, found 0"),
        Case(section("[verification]\ncache_size = -1"), "verification.cache_size", "must be at least 0, found -1"),
    ])
    func integersOutOfRangeAreReported(testCase: Case) { Self.expectOnlyIssue(testCase) }

    @Test(arguments: [
        Case(section("[listen]\naddress = \"0.0.0.0\""), "listen.address", "missing port"),
        Case(section("[listen]\naddress = \"0.0.0.0:65536\""), "listen.address", "port must be a number from 0 to 65535"),
        Case(section("[listen]\naddress = \"0.0.0.0:-1\""), "listen.address", "port must be a number"),
        Case(section("[listen]\naddress = \"0.0.0.0:http\""), "listen.address", "port must be a number"),
        Case(section("[listen]\naddress = \"::1:8080\""), "listen.address", "an IPv6 host needs brackets"),
        Case(section("[listen]\naddress = \"[::1:8080\""), "listen.address", "unclosed IPv6 bracket"),
        Case(section("[admin]\naddress = \"[example.com]:1\""), "admin.address", "is not an IPv6 address"),
        Case(section("[admin]\naddress = \":9901\""), "admin.address", "missing host"),
        Case(section("[admin]\naddress = \"a b:9901\""), "admin.address", "is not a host name"),
        Case(section("[admin]\naddress = \"0.0.0.0:8080\""), "admin.address", "must not share a port with listen.address"),
    ])
    func badAddressesAreReported(testCase: Case) { Self.expectOnlyIssue(testCase) }

    @Test(arguments: [
        ("[::1]:8080", "::1", 8080), ("[::]:0", "::", 0), ("example.com:65535", "example.com", 65535), ("127.0.0.1:1", "127.0.0.1", 1),
    ])
    func goodAddressesParse(text: String, host: String, port: Int) throws {
        let configuration = try Configuration.parse(toml: Self.section("[listen]\naddress = \"\(text)\""))
        #expect(configuration.listen.address == SocketAddressSetting(host: host, port: port))
    }

    static func upstream(_ url: String) -> String { ConfigFixture.minimal().replacingOccurrences(of: "http://127.0.0.1:3000", with: url) }

    @Test(arguments: [
        Case(upstream("ftp://127.0.0.1"), "upstream.url", "must be an http:// or https:// URL"),
        Case(upstream("http://"), "upstream.url", "must have a host"),
        Case(upstream("http://x/?a=1"), "upstream.url", "must not have a query (?) or fragment (#)"),
        Case(upstream("http://x/#top"), "upstream.url", "must not have a query (?) or fragment (#)"),
        Case(upstream("http://x:99999"), "upstream.url", "port must be from 1 to 65535"),
        Case(upstream("http://user:secret@x"), "upstream.url", "must not contain user:password@"),
        Case(upstream("not a url"), "upstream.url", "is not a valid URL"),
        Case(ConfigFixture.minimal().replacingOccurrences(of: "http://127.0.0.1:8999/jwks.json", with: "file:///etc/jwks.json"),
             "provider[0].jwks_uri", "must be an http:// or https:// URL"),
        Case(ConfigFixture.minimal() + "revocation_endpoint = \"/revoke\"\n",
             "provider[0].revocation_endpoint", "must be an http:// or https:// URL"),
        Case(provider("name = \"c\"\ntype = \"oidc\"\nissuer = \"http://login.example.com\"\naudiences = [\"a\"]"),
             "provider[0].issuer", "must be an https:// URL (http:// only for 127.0.0.1, localhost or [::1])"),
        Case(provider("name = \"c\"\ntype = \"oidc\"\nissuer = \"https://login.example.com?tenant=1\"\naudiences = [\"a\"]"),
             "provider[0].issuer", "must not have a query"),
        Case(provider("name = \"c\"\ntype = \"jwks\"\nissuer = \"\"\njwks_uri = \"https://x/k\"\naudiences = [\"a\"]"),
             "provider[0].issuer", "must not be empty"),
    ])
    func badURLsAreReported(testCase: Case) { Self.expectOnlyIssue(testCase) }

    @Test(arguments: ["http://127.0.0.1:8080/realms/x", "http://localhost", "http://[::1]:9000", "https://login.example.com/tenant"])
    func oidcIssuerAllowsHTTPOnlyOnLoopback(issuer: String) throws {
        let configuration = try Configuration.parse(toml: Self.provider("name = \"c\"\ntype = \"oidc\"\nissuer = \"\(issuer)\"\naudiences = [\"a\"]"))
        #expect(configuration.providers[0].issuer == issuer)
    }

    @Test func jwksIssuerMayBeAnyNonEmptyString() throws {
        let configuration = try Configuration.parse(toml: Self.provider(
            "name = \"l\"\ntype = \"jwks\"\nissuer = \"my-issuer\"\njwks_uri = \"http://127.0.0.1:1/k\"\naudiences = [\"a\"]"))
        #expect(configuration.providers[0].issuer == "my-issuer")
    }

    @Test(arguments: [
        Case(ConfigFixture.jwksProvider, "upstream", "required ([upstream] with url, or [ext_authz] for an authorizer only)"),
        Case("[upstream]\nconnect_timeout = \"1s\"\n" + ConfigFixture.jwksProvider, "upstream.url", "required"),
        Case(ConfigFixture.upstream, "provider", "required (at least one [[provider]])"),
        Case("provider = []\n" + ConfigFixture.upstream, "provider", "required (at least one [[provider]])"),
    ])
    func requiredSectionsAreReported(testCase: Case) { Self.expectOnlyIssue(testCase) }

    @Test(arguments: [
        Case(provider("name = \"g\"\ntype = \"google\""), "provider[0].audiences", "required for type \"google\""),
        Case(provider("name = \"a\"\ntype = \"apple\""), "provider[0].audiences", "required for type \"apple\""),
        Case(provider("name = \"f\"\ntype = \"firebase\""), "provider[0].project_id", "required for type \"firebase\""),
        Case(provider("name = \"c\"\ntype = \"cognito\"\nuser_pool_id = \"x_1\"\nclient_ids = [\"c\"]"),
             "provider[0].region", "required for type \"cognito\""),
        Case(provider("name = \"c\"\ntype = \"cognito\"\nregion = \"eu-west-1\"\nclient_ids = [\"c\"]"),
             "provider[0].user_pool_id", "required for type \"cognito\""),
        Case(provider("name = \"c\"\ntype = \"cognito\"\nregion = \"eu-west-1\"\nuser_pool_id = \"eu-west-1_A\""),
             "provider[0].client_ids", "required for type \"cognito\""),
        Case(provider("name = \"o\"\ntype = \"oidc\"\naudiences = [\"a\"]"), "provider[0].issuer", "required for type \"oidc\""),
        Case(provider("name = \"o\"\ntype = \"oidc\"\nissuer = \"https://x\""), "provider[0].audiences", "required for type \"oidc\""),
        Case(provider("name = \"j\"\ntype = \"jwks\"\njwks_uri = \"https://x/k\"\naudiences = [\"a\"]"),
             "provider[0].issuer", "required for type \"jwks\""),
        Case(provider("name = \"j\"\ntype = \"jwks\"\nissuer = \"i\"\naudiences = [\"a\"]"), "provider[0].jwks_uri", "required for type \"jwks\""),
        Case(provider("name = \"j\"\ntype = \"jwks\"\nissuer = \"i\"\njwks_uri = \"https://x/k\""),
             "provider[0].audiences", "required for type \"jwks\""),
        Case(provider("type = \"apple\"\naudiences = [\"a\"]"), "provider[0].name", "required"),
        Case(provider("name = \"a\"\naudiences = [\"a\"]"), "provider[0].type", "required"),
    ])
    func providerRequiredKeysAreReportedPerType(testCase: Case) { Self.expectOnlyIssue(testCase) }

    @Test(arguments: [
        Case(provider("name = \"g\"\ntype = \"google\"\naudiences = [\"a\"]\nproject_id = \"p\""),
             "provider[0].project_id", "not used by type \"google\" (only by firebase)"),
        Case(provider("name = \"a\"\ntype = \"apple\"\naudiences = [\"a\"]\nhosted_domains = [\"example.com\"]"),
             "provider[0].hosted_domains", "not used by type \"apple\" (only by google)"),
        Case(provider("name = \"o\"\ntype = \"oidc\"\nissuer = \"https://x\"\naudiences = [\"a\"]\nregion = \"eu-west-1\""),
             "provider[0].region", "not used by type \"oidc\" (only by cognito)"),
        Case(provider("name = \"f\"\ntype = \"firebase\"\nproject_id = \"p\"\naudiences = [\"p\"]"),
             "provider[0].audiences", "not used by type \"firebase\" (only by google, apple, oidc, jwks, introspection, entra, kubernetes)"),
        Case(provider("name = \"g\"\ntype = \"google\"\naudiences = [\"a\"]\ntoken_use = \"id\""),
             "provider[0].token_use", "not used by type \"google\" (only by cognito)"),
        Case(provider(cognito + "user_pool_id = \"eu-west-1_A\"\naudiences = [\"c\"]"),
             "provider[0].audiences", "not used by type \"cognito\""),
    ])
    func keysOfOtherProviderTypesAreErrors(testCase: Case) { Self.expectOnlyIssue(testCase) }

    static let cognito = "name = \"c\"\ntype = \"cognito\"\nregion = \"eu-west-1\"\nclient_ids = [\"c\"]\n"

    @Test(arguments: [
        Case(provider("name = \"\"\ntype = \"apple\"\naudiences = [\"a\"]"), "provider[0].name", "must not be empty"),
        Case(provider("name = \"my provider\"\ntype = \"apple\"\naudiences = [\"a\"]"),
             "provider[0].name", "may contain only letters, digits, - and _"),
        Case(provider("name = \"a\"\ntype = \"saml\"\naudiences = [\"a\"]"),
             "provider[0].type", "must be one of google | apple | firebase | cognito | oidc | jwks | introspection | entra | kubernetes, found \"saml\""),
        Case(provider("name = \"a\"\ntype = \"apple\"\naudiences = []"), "provider[0].audiences", "must list at least one value"),
        Case(provider("name = \"a\"\ntype = \"apple\"\naudiences = [\"\"]"), "provider[0].audiences", "element 0: must not be empty"),
        Case(provider("name = \"f\"\ntype = \"firebase\"\nproject_id = \"a/b\""), "provider[0].project_id", "is not a Firebase project id"),
        Case(provider(cognito + "user_pool_id = \"us-east-1_A\""), "provider[0].user_pool_id", "is not a pool of region eu-west-1"),
        Case(provider(cognito + "user_pool_id = \"eu-west-1_A\"\ntoken_use = \"both\""), "provider[0].token_use",
             "must be one of access | id | any, found \"both\""),
        Case(provider(cognito + "user_pool_id = \"eu-west-1_A\"\nuserinfo = true"), "provider[0].domain", "required when userinfo = true"),
        Case(provider(cognito + "user_pool_id = \"eu-west-1_A\"\nclient_ids = []").replacingOccurrences(of: "client_ids = [\"c\"]\n", with: ""),
             "provider[0].client_ids", "must list at least one value"),
        Case(provider("name = \"c\"\ntype = \"cognito\"\nregion = \"EU west\"\nuser_pool_id = \"x\"\nclient_ids = [\"c\"]"),
             "provider[0].region", "is not an AWS region"),
        Case(provider(cognito + "user_pool_id = \"eu-west-1_A\"\ndomain = \"auth.example.com\""),
             "provider[0].domain", "must be an http:// or https:// URL"),
    ])
    func providerValuesAreValidated(testCase: Case) { Self.expectOnlyIssue(testCase) }

    @Test func duplicateProviderNamesAreReportedAtTheSecond() {
        let toml = ConfigFixture.minimal() + "[[provider]]\nname = \"local\"\ntype = \"apple\"\naudiences = [\"a\"]\n"
        #expect(ConfigFixture.issues(toml) == [
            ConfigurationIssue(keyPath: "provider[1].name", message: "duplicate provider name \"local\" (also provider[0])"),
        ])
    }

    @Test(arguments: [
        Case(ConfigFixture.minimal() + "algorithms = [\"none\"]\n",
             "provider[0].algorithms", "\"none\" is never accepted: an unsigned token proves nothing"),
        Case(ConfigFixture.minimal() + "algorithms = [\"RS256\", \"HS256\"]\n", "provider[0].algorithms", "\"HS256\" is never accepted: HMAC"),
        Case(ConfigFixture.minimal() + "algorithms = [\"hs512\"]\n", "provider[0].algorithms", "\"hs512\" is never accepted: HMAC"),
        Case(ConfigFixture.minimal() + "algorithms = [\"rs256\"]\n", "provider[0].algorithms", "case-sensitive, did you mean \"RS256\"?"),
        Case(ConfigFixture.minimal() + "algorithms = [\"RSA\"]\n",
             "provider[0].algorithms", "unknown algorithm \"RSA\", expected one of RS256, RS384"),
        Case(ConfigFixture.minimal() + "algorithms = []\n", "provider[0].algorithms", "must list at least one algorithm"),
    ])
    func algorithmsMustBeAsymmetricJWSAlgorithms(testCase: Case) { Self.expectOnlyIssue(testCase) }

    @Test(arguments: [
        Case(section("[headers]\n\"X Auth\" = \"sub\""), "headers.\"X Auth\"", "not a valid header name"),
        Case(section("[headers]\n\"X-Auth:Sub\" = \"sub\""), "headers.\"X-Auth:Sub\"", "not a valid header name"),
        Case(section("[headers]\n\"X-Auth-Provider\" = \"iss\""), "headers.X-Auth-Provider", "X-Auth-Provider is reserved"),
        Case(section("[headers]\n\"x-auth-claims\" = \"sub\""), "headers.x-auth-claims", "is reserved"),
        Case(section("[headers]\n\"X-Auth-Guest\" = \"sub\""), "headers.X-Auth-Guest", "is reserved"),
        Case(section("[headers]\n\"Host\" = \"sub\""), "headers.Host", "cannot carry a claim"),
        Case(section("[headers]\n\"Content-Length\" = \"sub\""), "headers.Content-Length", "cannot carry a claim"),
        Case(section("[headers]\n\"Proxy-Authorization\" = \"sub\""), "headers.Proxy-Authorization", "cannot carry a claim"),
        Case(section("[headers]\n\"X-A\" = \"sub\"\n\"x-a\" = \"email\""), "headers.x-a", "duplicate header name"),
        Case(section("[headers]\n\"X-A\" = \"\""), "headers.X-A", "the claim path must not be empty"),
        Case(section("[headers]\n\"X-A\" = \"address..country\""), "headers.X-A", "has an empty segment"),
        Case(section("[headers]\n\"X.A\" = \".sub\""), "headers.\"X.A\"", "has an empty segment"),
        Case(ConfigFixture.minimal() + "[provider.headers]\n\"X-Auth-Domain\" = \"\"\n", "provider[0].headers.X-Auth-Domain", "must not be empty"),
        Case(ConfigFixture.minimal() + "[provider.headers]\nforward_claims_json = false\n", "provider[0].headers.forward_claims_json",
             "only allowed in the top-level [headers] table"),
        Case(ConfigFixture.minimal() + "[provider.headers]\n\"X-Auth-Claims\" = \"sub\"\n", "provider[0].headers.X-Auth-Claims", "is reserved"),
    ])
    func headerNamesAndClaimPathsAreValidated(testCase: Case) { Self.expectOnlyIssue(testCase) }

    @Test(arguments: [
        Case(route("prefix = \"/a\"\npath = \"/a\""), "route[0]", "give exactly one of prefix or path, not both"),
        Case(route("auth = \"public\""), "route[0]", "needs prefix or path"),
        Case(route("prefix = \"health\""), "route[0].prefix", "must start with \"/\""),
        Case(route("path = \"/a//b\""), "route[0].path", "must not contain \"//\""),
        Case(route("prefix = \"/a/../b\""), "route[0].prefix", "must not contain \".\" or \"..\" segments"),
        Case(route("path = \"/a?x=1\""), "route[0].path", "without ? or #"),
        Case(route("path = \"/caf\u{E9}\""), "route[0].path", "visible ASCII"),
        Case(route("prefix = \"/\"\nmethods = [\"GE T\"]"), "route[0].methods", "\"GE T\" is not a valid method name"),
        Case(route("prefix = \"/\"\nmethods = []"), "route[0].methods", "must list at least one method"),
        Case(route("prefix = \"/\"\nauth = \"private\""), "route[0].auth", "must be one of public | optional | required, found \"private\""),
        Case(route("prefix = \"/\"\nproviders = []"), "route[0].providers", "must name at least one provider"),
        Case(route("prefix = \"/\"\nemail_domains = [\"@example.com\"]"), "route[0].email_domains", "is not a domain"),
    ])
    func routeShapeIsValidated(testCase: Case) { Self.expectOnlyIssue(testCase) }

    @Test func routeProvidersMustBeConfigured() {
        let toml = Self.section(
            "[[route]]\nprefix = \"/a\"\n[[route]]\nprefix = \"/b\"\n[[route]]\nprefix = \"/c\"\nproviders = [\"local\", \"gogle\"]")
        #expect(ConfigFixture.issues(toml) == [
            ConfigurationIssue(keyPath: "route[2].providers", message: "unknown provider \"gogle\" (configured: local)"),
        ])
    }

    @Test(arguments: ["providers = [\"local\"]", "scopes = [\"a\"]", "groups = [\"g\"]", "email_domains = [\"example.com\"]",
                      "require_email_verified = true", "require_email_verified = false"])
    func publicRouteRejectsTokenRequirements(line: String) throws {
        let key = try #require(line.split(separator: " ").first)
        Self.expectOnlyIssue(Case(Self.route("prefix = \"/\"\nauth = \"public\"\n" + line), "route[0].\(key)", "has no effect on a public route"))
    }

    @Test(arguments: [
        Case(section("[failure_log]\npseudonymize = true"), "failure_log.pseudonymize_key_file", "required when pseudonymize = true"),
        Case(section("[failure_log]\npath = \"\""), "failure_log.path", "must not be empty"),
        Case(section("[log]\nformat = \"xml\""), "log.format", "must be one of text | json, found \"xml\""),
        Case(section("[log]\nlevel = \"verbose\""), "log.level", "must be one of trace | debug | info | notice | warning | error | critical"),
        Case(section("[jwks]\nmin_refresh = \"48h\""), "jwks.min_refresh", "min_refresh (48h) must not exceed max_refresh (24h)"),
        Case(section("[jwks]\nmax_refresh = \"1m\""), "jwks.max_refresh", "min_refresh (5m) must not exceed max_refresh (1m)"),
        Case(section("[jwks]\nfetch_timeout = \"0s\""), "jwks.fetch_timeout", "must be greater than 0s"),
        Case(upstreamSetting("timeout = \"0ms\""), "upstream.timeout", "must be greater than 0s"),
        Case(upstreamSetting("connect_timeout = \"0s\""), "upstream.connect_timeout", "must be greater than 0s"),
        Case(section("[listen]\ntls_cert = \"/c.pem\""), "listen.tls_key", "required when tls_cert is set"),
        Case(section("[listen]\ntls_key = \"/k.pem\""), "listen.tls_cert", "required when tls_key is set"),
        Case(section("[verification]\ntoken_header = \"authorization\""), "verification.token_header", "Authorization is always read"),
        Case(section("[verification]\ntoken_header = \"X Token\""), "verification.token_header", "is not a valid header name"),
        Case(section("[verification]\ntoken_cookie = \"id;token\""), "verification.token_cookie", "is not a valid cookie name"),
    ])
    func sectionRulesAreEnforced(testCase: Case) { Self.expectOnlyIssue(testCase) }

    @Test func zeroUnknownKidCooldownIsAllowed() throws {
        let configuration = try Configuration.parse(toml: Self.section("[jwks]\nunknown_kid_cooldown = \"0s\""))
        #expect(configuration.jwks.unknownKidCooldown == .zero)
    }

    @Test(arguments: [
        Case(section("[revocation]\nstore = \"redis://cache\""), "revocation.store", "must be \"memory\", \"sqlite:/path/file.db\" or"),
        Case(section("[revocation]\nstore = \"sqlite:\""), "revocation.store", "sqlite: needs a file path"),
        Case(section("[revocation]\nstore = \"postgres:///db\""), "revocation.store", "is not a valid postgres:// URL with a host"),
        Case(section("[revocation]\nstore = \"postgres://db/g\"\npassword = \"x\"\npassword_file = \"/f\""),
             "revocation.password_file", "give either password or password_file, not both"),
        Case(section("[revocation]\nstore = \"postgres://db/g\"\npassword = \"env:\""), "revocation.password", "is not an environment variable name"),
        Case(section("[revocation]\nstore = \"postgres://db/g\"\npassword = \"env:1PG\""),
             "revocation.password", "is not an environment variable name"),
        Case(section("[revocation]\npassword = \"hunter2\""), "revocation.password", "only used by a postgres:// store"),
        Case(section("[revocation]\nstore = \"sqlite:/x.db\"\npassword_file = \"/f\""),
             "revocation.password_file", "only used by a postgres:// store"),
    ])
    func revocationStoreAndSecretAreValidated(testCase: Case) { Self.expectOnlyIssue(testCase) }

    @Test func everyProblemIsReportedAtOnce() {
        let toml = """
            [listen]
            address = "0.0.0.0"
            max_header_bytes = 10
            [upstream]
            url = "ftp://x"
            timeout = "soon"
            [log]
            level = "loud"
            [[provider]]
            name = "google"
            type = "google"
            project_id = "p"
            [[provider]]
            name = "google"
            type = "apple"
            audiences = ["a"]
            [[route]]
            prefix = "/x"
            providers = ["nobody"]
            colour = "red"
            """
        let issues = ConfigFixture.issues(toml)
        #expect(issues.map(\.keyPath) == [
            "listen.address", "listen.max_header_bytes", "upstream.url", "upstream.timeout", "log.level",
            "provider[0].project_id", "provider[0].audiences", "provider[1].name", "route[0].providers", "route[0].colour",
        ], "\(issues)")
        #expect(issues.first { $0.keyPath == "provider[0].audiences" }?.description == "provider[0].audiences: required for type \"google\"")
        #expect(ConfigurationError(issues: issues).description.split(separator: "\n").count == 10)
    }

    @Test func aBrokenProviderDoesNotMakeRoutesReferringToItFail() {
        let toml = Self.provider("name = \"g\"\ntype = \"google\"") + "[[route]]\nprefix = \"/\"\nproviders = [\"g\"]\n"
        #expect(ConfigFixture.issues(toml).map(\.keyPath) == ["provider[0].audiences"])
    }

    @Test func invalidTypeDoesNotCascadeIntoUnknownKeyErrors() {
        let toml = Self.provider("name = \"c\"\ntype = \"cognitoo\"\nregion = \"eu-west-1\"\nuser_pool_id = \"eu-west-1_A\"\nclient_ids = [\"c\"]")
        #expect(ConfigFixture.issues(toml).map(\.keyPath) == ["provider[0].type"])
    }
}
