import Foundation
@testable import Gatehouse
import NIOCore
import Testing
import GatehouseSyntax
import GatehouseRules
import GatehouseConfig

/// Issue 44's `[headers]` expressions and `when` rules through real sockets: a computed header reaches the upstream
/// in §5's encoding and is an identity header like the others (the client's spellings stripped, an ext_authz Check
/// allowing it with overwrite); a rule's denial is one failure-log line that names the rule.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct RuleExpressionTests {
    static func configure(_ configuration: inout Configuration) {
        configuration.extAuthz = ExtAuthzSettings(address: SocketAddressSetting(host: "127.0.0.1", port: 0))
        configuration.headers.mappings += [
            // A string, a list joined with ",", an int in string() form, and one that fails (no header).
            HeaderMapping(name: "X-Auth-Mail-Domain", expression: try! RuleExpression(  // safe: constant valid expressions
                headerValue: "claims.email.endsWith('@example.com') ? 'example.com' : 'elsewhere'", maxHeaderBytes: 16384)),
            HeaderMapping(name: "X-Auth-Teams", expression: try! RuleExpression(
                headerValue: "claims.teams.filter(t, t != 'b').map(t, t + ',x')", maxHeaderBytes: 16384)),
            HeaderMapping(name: "X-Auth-Level", expression: try! RuleExpression(headerValue: "claims.level * 2", maxHeaderBytes: 16384)),
            HeaderMapping(name: "X-Auth-Tenant", expression: try! RuleExpression(headerValue: "claims.tenant", maxHeaderBytes: 16384)),
        ]
        var route = RouteSettings(match: .prefix("/ops"))
        route.when = try! RuleExpression(rule: "claims.teams.exists(t, t == 'ops')", maxHeaderBytes: 16384)  // safe: valid
        configuration.routes = [route]
    }

    static let claims = Claims.valid(extra: ["teams": .array([.string("a"), .string("b"), .string("c")]), "level": .number("21")])

    @Test func computedHeadersReachTheUpstreamAndForgedOnesDoNot() async throws {
        try await TestEnvironment.run(configure: { configuration, _ in Self.configure(&configuration) }) { env in
            let token = TestSigner.ec.token(claims: Self.claims)
            let forged = [("X-Auth-Tenant", "evil"), ("x_auth_tenant", "evil"), ("X-Auth-Mail-Domain", "evil.example")]
            let response = try await env.request("/v1/orders", token: token, headers: forged)
            #expect(response.status == 200)
            let received = try #require(env.upstream.requests.last)
            #expect(received.values("x-auth-mail-domain") == ["example.com"])
            #expect(received.values("x-auth-teams") == ["a%2Cx,c%2Cx"], "a list joined with ',', a ',' inside an element encoded")
            #expect(received.values("x-auth-level") == ["42"])
            #expect(received.values("x-auth-tenant").isEmpty && received.values("x_auth_tenant").isEmpty,
                    "an expression that fails sets no header, and the client's spellings are stripped")
        }
    }

    @Test func aCheckAllowsComputedHeadersWithOverwriteAndRemovesTheClientsSpellings() async throws {
        try await TestEnvironment.run(configure: { configuration, _ in Self.configure(&configuration) }) { env in
            let port = try #require(env.gatehouse.extAuthzAddress?.port)
            let token = TestSigner.ec.token(claims: Self.claims)
            let answers = try await ExtAuthzTests.call(port, [
                ExtAuthzTests.check("computed", headers: [("authorization", "Bearer \(token)"), ("x-auth-tenant", "evil"), ("x_auth_level", "9")]),
            ])
            let answer = try #require(answers["computed"])
            #expect(answer.allowed == true, "\(answer)")
            #expect(answer.values("x-auth-level") == ["42"] && answer.values("x-auth-mail-domain") == ["example.com"], "\(answer)")
            #expect(answer.headers.filter { $0.0 == "x-auth-level" }.allSatisfy { $0.2 == 2 }, "OVERWRITE_IF_EXISTS_OR_ADD: \(answer)")
            #expect(answer.remove.contains("x-auth-tenant") && answer.remove.contains("x_auth_level"), "\(answer)")
        }
    }

    @Test func aRuleDenialIsOneFailureLogLineNamingTheRule() async throws {
        try await TestEnvironment.run(configure: { configuration, _ in Self.configure(&configuration) }) { env in
            let allowed = try await env.request("/ops/x", token: TestSigner.ec.token(claims: Claims.valid(extra: ["teams": .array([.string("ops")])])))
            #expect(allowed.status == 200)
            let denied = try await env.request("/ops/x", token: TestSigner.ec.token(claims: Self.claims))
            #expect(denied.status == 403)
            let missing = try await env.request("/ops/x", token: TestSigner.ec.token(claims: Claims.valid()))
            #expect(missing.status == 403)
            let lines = env.failureLog
            #expect(lines.count == 2, "\(lines)")
            #expect(lines.first?["reason"] == .string("forbidden") && lines.first?["detail"] == .string("rule route[0].when is false"), "\(lines)")
            #expect(lines.last?["detail"] == .string("rule route[0].when failed: no such key: teams"), "\(lines)")
        }
    }
}
