import Testing
@testable import GatehouseSyntax
import GatehousePolicy
import GatehouseVocabulary
import GatehouseConfig


struct RouteRequirementsTests {
    private func strings(_ values: String...) -> JSONValue {
        .array(values.map(JSONValue.string))
    }

    @Test func ruleWithoutRequirementsAcceptsAnyClaims() {
        #expect(RouteRule.defaultRule.checkRequirements(claims: [:]) == nil)
    }

    @Test func allScopesFromASpaceSeparatedScopeClaimSatisfyTheRoute() {
        let rule = RouteRule(auth: .required, scopes: ["read", "write"])
        #expect(rule.checkRequirements(claims: ["scope": .string("openid write  read")]) == nil)
    }

    @Test func scopesFromAnScpArrayOrStringSatisfyTheRoute() {
        let rule = RouteRule(auth: .required, scopes: ["read", "write"])
        #expect(rule.checkRequirements(claims: ["scp": strings("read", "write")]) == nil)
        #expect(rule.checkRequirements(claims: ["scp": .string("write read")]) == nil)
        #expect(rule.checkRequirements(claims: ["scope": .string("read"), "scp": strings("write")]) == nil)
    }

    @Test func missingScopeGives403InsufficientScopeNamingTheRouteScopes() throws {
        let rule = RouteRule(auth: .required, scopes: ["read", "write"])
        let failure = try #require(rule.checkRequirements(claims: ["scope": .string("read")]))
        #expect(failure.reason == .insufficientScope)
        #expect(failure.requiredScopes == ["read", "write"])
        #expect(failure.detail.contains("write"))
    }

    @Test(arguments: [
        [String: JSONValue](),
        ["scope": .string("read write-all")],
        ["scope": .string("READ WRITE")],
        ["scope": .array([.string("read"), .string("write")])],
        ["scp": .array([.string("read write")])],
        ["scp": .number("1")],
        ["scope": .string("readwrite")],
    ])
    func scopesAreMatchedExactlyAndOnlyFromTheDocumentedShapes(claims: [String: JSONValue]) {
        let rule = RouteRule(auth: .required, scopes: ["read", "write"])
        #expect(rule.checkRequirements(claims: claims)?.reason == .insufficientScope)
    }

    @Test func anyOneGroupIsEnough() {
        let rule = RouteRule(auth: .required, groups: ["admins", "ops"])
        #expect(rule.checkRequirements(claims: ["groups": strings("users", "ops")]) == nil)
        #expect(rule.checkRequirements(claims: ["cognito:groups": strings("admins")]) == nil)
        #expect(rule.checkRequirements(claims: ["groups": .string("admins")]) == nil)
    }

    @Test(arguments: [
        [String: JSONValue](),
        ["groups": .array([.string("users")])],
        ["groups": .string("admins ops")],
        ["groups": .array([.string("Admins")])],
        ["groups": .object(["admins": .bool(true)])],
        ["roles": .array([.string("admins")])],
    ])
    func notBeingInAnyGroupIsForbidden(claims: [String: JSONValue]) throws {
        let rule = RouteRule(auth: .required, groups: ["admins", "ops"])
        #expect(rule.checkRequirements(claims: claims)?.reason == .forbidden)
    }

    @Test(arguments: ["alice@example.com", "Alice@EXAMPLE.com", "a@b@example.com", "\"a@evil.com\"@example.com"])
    func emailInAnAllowedDomainPasses(email: String) {
        let rule = RouteRule(auth: .required, emailDomains: ["Example.com", "corp.test"])
        #expect(rule.checkRequirements(claims: ["email": .string(email)]) == nil)
    }

    @Test(arguments: ["alice@evil.com", "alice@sub.example.com", "alice@example.com@evil.com", "alice@example.com.evil.com",
                      "alice@notexample.com", "example.com", "@example.com", "alice@", "alice@example.com.", "alice@exampl\u{212A}.com"])
    func emailOutsideTheAllowedDomainsIsForbidden(email: String) {
        let rule = RouteRule(auth: .required, emailDomains: ["example.com", "examplk.com"])
        let failure = rule.checkRequirements(claims: ["email": .string(email)])
        #expect(failure?.reason == .forbidden)
    }

    @Test func emailThatIsMissingOrNotAStringIsForbidden() {
        let rule = RouteRule(auth: .required, emailDomains: ["example.com"])
        #expect(rule.checkRequirements(claims: [:])?.reason == .forbidden)
        #expect(rule.checkRequirements(claims: ["email": strings("a@example.com")])?.reason == .forbidden)
    }

    @Test func emailDomainDoesNotImplyVerifiedEmail() {
        let rule = RouteRule(auth: .required, emailDomains: ["example.com"])
        #expect(rule.checkRequirements(claims: ["email": .string("a@example.com"), "email_verified": .bool(false)]) == nil)
    }

    @Test func verifiedEmailAcceptsTrueAndAppleStringTrue() {
        let rule = RouteRule(auth: .required, requireEmailVerified: true)
        #expect(rule.checkRequirements(claims: ["email_verified": .bool(true)]) == nil)
        #expect(rule.checkRequirements(claims: ["email_verified": .string("true")]) == nil)
    }

    // docs/security.md P14
    @Test(arguments: [JSONValue.bool(false), .string("false"), .string("TRUE"), .string("1"), .number("1"), .null])
    func unverifiedEmailIsForbidden(verified: JSONValue) {
        let rule = RouteRule(auth: .required, requireEmailVerified: true)
        #expect(rule.checkRequirements(claims: ["email": .string("a@example.com"), "email_verified": verified])?.reason == .forbidden)
        #expect(rule.checkRequirements(claims: [:])?.reason == .forbidden)
    }

    @Test func missingScopeIsReportedBeforeOtherRequirements() {
        let rule = RouteRule(auth: .required, scopes: ["s"], groups: ["g"], emailDomains: ["example.com"], requireEmailVerified: true)
        #expect(rule.checkRequirements(claims: [:])?.reason == .insufficientScope)
        let all: [String: JSONValue] = [
            "scope": .string("s"), "groups": strings("g"), "email": .string("x@example.com"), "email_verified": .bool(true),
        ]
        #expect(rule.checkRequirements(claims: all) == nil)
    }
}
