import Foundation
@testable import Gatehouse
import NIOCore
import Testing
import GatehouseSyntax
import GatehouseConfig

/// RFC 9068 typed access tokens: with `token_typ = ["at+jwt"]` an ID token signed by the same issuer with
/// the same keys and audience (what every front end holds) is refused as an access token, on both doors.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct AccessTokenTypeTests {
    static func requireAccessTokens(_ configuration: inout Configuration, _ jwks: TestJWKSServer) {
        configuration.providers[0].tokenTypes = ["at+jwt"]
    }

    /// A token whose header has no `typ` at all.
    static func untyped(_ claims: [String: JSONValue]) -> String {
        TestSigner.ec.token(rawHeader: JSONValue.object(["alg": .string("ES256"), "kid": .string("ec-1")]).compactJSON,
                            rawPayload: JSONValue.object(claims).compactJSON)
    }

    @Test func onlyTheListedTypIsAcceptedAndAnIDTokenIsNamedAsSuch() async throws {
        try await TestEnvironment.run(configure: Self.requireAccessTokens) { (env: TestEnvironment) async throws in
            let claims = Claims.valid()
            for typ in ["at+jwt", "application/AT+JWT"] {
                let response = try await env.request("/v1/orders", token: TestSigner.ec.token(claims: claims, header: ["typ": .string(typ)]))
                #expect(response.status == 200, "typ \(typ)")
            }
            // An OpenID ID token: typ JWT, a nonce, the client as audience, same issuer and keys.
            let idToken = TestSigner.ec.token(claims: Claims.valid(extra: ["nonce": .string("n-0S6"), "at_hash": .string("77QmUPtjPfzWtF2AnpK9RQ")]),
                                              header: ["typ": .string("JWT")])
            let refused = try await env.request("/v1/orders", token: idToken)
            #expect(refused.status == 401)
            #expect(refused.json?["reason"] == .string("wrong_token_type"))
            #expect(refused.json?["message"] == .string("The token is not an access token of an accepted type."))
            let line = try #require(env.failureLog.last)
            #expect(line["reason"] == .string("wrong_token_type"))
            #expect(line["sub"] == .string("user-1"), "the token is authentic: its subject is named")
            #expect(line["detail"]?.stringValue?.contains("an ID token") == true, "\(line)")
            let untyped = try await env.request("/v1/orders", token: Self.untyped(claims))
            #expect(untyped.json?["reason"] == .string("wrong_token_type"))
            #expect(env.failureLog.last?["detail"]?.stringValue?.hasPrefix("no typ") == true)
            // The same verdict over HTTP/2.
            let answers = try await HTTP2IntakeTests.send([HTTP2IntakeTests.Sent(
                name: "id", headers: HTTP2IntakeTests.block(env) + [("authorization", "Bearer \(idToken)")])], to: env)
            #expect(answers["id"]?.status == 401 && answers["id"]?.json?["reason"] == .string("wrong_token_type"))
            #expect(env.upstream.requests.count == 2)
        }
    }

    @Test func withoutTokenTypAnyTypIsAcceptedAsBefore() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            for typ in ["JWT", "at+jwt"] {
                #expect(try await env.request("/v1/orders", token: TestSigner.ec.token(claims: Claims.valid(), header: ["typ": .string(typ)])).status
                    == 200)
            }
            #expect(try await env.request("/v1/orders", token: Self.untyped(Claims.valid())).status == 200)
        }
    }
}
