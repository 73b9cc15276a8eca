import Testing
import GatehouseConfig
import GatehousePolicy


struct RouteTableTests {
    private func route(_ match: RouteSettings.Match, auth: RouteSettings.Auth, methods: [String] = []) -> RouteSettings {
        var settings = RouteSettings(match: match)
        settings.auth = auth
        settings.methods = methods
        return settings
    }

    private var interfaceExampleTable: RouteTable {
        var sync = route(.prefix("/v1/sync"), auth: .required)
        sync.providers = ["google", "apple"]
        sync.scopes = ["sync:write"]
        sync.groups = ["admins"]
        sync.emailDomains = ["Example.COM"]
        sync.requireEmailVerified = true
        return RouteTable([
            route(.prefix("/health"), auth: .public),
            route(.prefix("/v1/events"), auth: .optional, methods: ["GET"]),
            sync,
        ])
    }

    @Test(arguments: ["/health", "/health/", "/health/live", "/health/a/b"])
    func prefixMatchesItselfAndItsSubpaths(path: String) {
        let rule = interfaceExampleTable.match(method: "GET", path: path)
        #expect(rule.auth == .public)
        #expect(rule.index == 0)
    }

    @Test(arguments: ["/healthy", "/health-check", "/healt", "/", "/x/health"])
    func prefixDoesNotMatchAPathThatMerelyStartsWithItsText(path: String) {
        let rule = interfaceExampleTable.match(method: "GET", path: path)
        #expect(rule.index == nil)
        #expect(rule == .defaultRule)
    }

    @Test func noMatchGetsTheDefaultRuleRequiringATokenAndNothingElse() {
        let rule = RouteTable([]).match(method: "GET", path: "/anything")
        #expect(rule.auth == .required)
        #expect(rule.providers.isEmpty && rule.scopes.isEmpty && rule.groups.isEmpty && rule.emailDomains.isEmpty)
        #expect(!rule.requireEmailVerified)
        #expect(rule.index == nil)
    }

    @Test func firstMatchWinsInFileOrder() {
        let table = RouteTable([
            route(.prefix("/api/public"), auth: .public),
            route(.prefix("/api"), auth: .optional),
            route(.prefix("/api/public/x"), auth: .required),
        ])
        #expect(table.match(method: "GET", path: "/api/public/x").index == 0)
        #expect(table.match(method: "GET", path: "/api/other").index == 1)
        #expect(table.match(method: "GET", path: "/api").auth == .optional)
    }

    @Test func methodsRestrictTheRouteCaseSensitively() {
        let table = interfaceExampleTable
        #expect(table.match(method: "GET", path: "/v1/events").auth == .optional)
        #expect(table.match(method: "POST", path: "/v1/events").auth == .required)
        #expect(table.match(method: "POST", path: "/v1/events").index == nil)
        #expect(table.match(method: "get", path: "/v1/events").index == nil)
        #expect(table.match(method: "DELETE", path: "/health").auth == .public)
    }

    @Test func headIsTreatedAsGetBecauseUpstreamsServeItWithTheGetHandler() {
        let table = RouteTable([route(.prefix("/reports"), auth: .required, methods: ["GET"]), route(.prefix("/"), auth: .public)])
        #expect(table.match(method: "HEAD", path: "/reports/1").index == 0)
        #expect(table.match(method: "OPTIONS", path: "/reports/1").index == 1)
    }

    @Test func prefixEndingInSlashMatchesPathsStartingWithIt() {
        let table = RouteTable([route(.prefix("/static/"), auth: .public)])
        #expect(table.match(method: "GET", path: "/static/").index == 0)
        #expect(table.match(method: "GET", path: "/static/app.js").index == 0)
        #expect(table.match(method: "GET", path: "/static").index == nil)
        #expect(table.match(method: "GET", path: "/staticx/a").index == nil)
    }

    @Test func rootPrefixMatchesEverything() {
        let table = RouteTable([route(.prefix("/"), auth: .optional)])
        for path in ["/", "/a", "/a/b/", "/%2F"] {
            #expect(table.match(method: "PATCH", path: path).index == 0)
        }
    }

    @Test func exactPathMatchesOnlyThatPathWithOrWithoutATrailingSlash() {
        let table = RouteTable([route(.path("/login"), auth: .public), route(.path("/"), auth: .optional)])
        #expect(table.match(method: "GET", path: "/login").index == 0)
        #expect(table.match(method: "GET", path: "/login/").index == 0)
        #expect(table.match(method: "GET", path: "/login/x").index == nil)
        #expect(table.match(method: "GET", path: "/logins").index == nil)
        #expect(table.match(method: "GET", path: "/").index == 1)
        #expect(table.match(method: "GET", path: "/x").index == nil)
    }

    // docs/security.md P15: a spelling an upstream reads as the protected path gets the protected path's rule.
    @Test func pathParametersAreIgnoredForMatching() {
        let table = RouteTable([
            route(.prefix("/admin"), auth: .required),
            route(.path("/me"), auth: .required),
            route(.prefix("/"), auth: .public),
        ])
        #expect(table.match(method: "GET", path: "/admin;x").index == 0)
        #expect(table.match(method: "GET", path: "/admin;jsessionid=1/users").index == 0)
        #expect(table.match(method: "GET", path: "/;x/admin").index == 0)
        #expect(table.match(method: "GET", path: "/me;x").index == 1)
        #expect(table.match(method: "GET", path: "/adminx;y").index == 2)
    }

    @Test func encodedSlashAfterAPrefixCountsAsABoundary() {
        let table = RouteTable([
            route(.prefix("/admin"), auth: .required),
            route(.prefix("/api/"), auth: .required),
            route(.prefix("/"), auth: .public),
        ])
        #expect(table.match(method: "GET", path: "/admin%2Fsecret").index == 0)
        #expect(table.match(method: "GET", path: "/api%2Fsecret").index == 1)
        #expect(table.match(method: "GET", path: "/admin%2").index == 2)
        #expect(table.match(method: "GET", path: "/adminx%2Fsecret").index == 2)
    }

    @Test func configuredPathsAreCanonicalizedLikeRequests() {
        let table = RouteTable([route(.prefix("/caf%c3%a9/./x//"), auth: .public), route(.path("/%7euser"), auth: .optional)])
        #expect(table.match(method: "GET", path: "/caf%C3%A9/x/y").index == 0)
        #expect(table.match(method: "GET", path: "/~user").index == 1)
    }

    @Test func ruleCarriesTheRouteRequirements() {
        let rule = interfaceExampleTable.match(method: "POST", path: "/v1/sync/items")
        #expect(rule.index == 2)
        #expect(rule.providers == ["google", "apple"])
        #expect(rule.scopes == ["sync:write"])
        #expect(rule.groups == ["admins"])
        #expect(rule.emailDomains == ["example.com"])
        #expect(rule.requireEmailVerified)
        #expect(rule.allows(provider: "google"))
        #expect(!rule.allows(provider: "cognito"))
        #expect(RouteRule.defaultRule.allows(provider: "cognito"))
    }

    @Test func normalizedAttackPathsMatchTheRuleOfTheirCanonicalForm() throws {
        let table = RouteTable([route(.prefix("/public"), auth: .public)])
        for target in ["/public/../admin", "/public/%2e%2e/admin", "//admin", "/./admin", "/admin?/public"] {
            let normalized = try #require(PathNormalizer.normalize(target))
            #expect(table.match(method: "GET", path: normalized.path).auth == .required, "\(target)")
        }
    }
}
