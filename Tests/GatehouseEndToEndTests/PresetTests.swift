import Foundation
@testable import Gatehouse
import NIOHTTP1
import Testing
import GatehouseSyntax
import GatehouseConfig

/// Google, Apple, Firebase and Cognito presets, end to end with a local JWKS server standing in for
/// the provider (the `jwks_uri` override) and tokens shaped like the real ones.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct PresetTests {
    static func only(_ provider: ProviderSettings, jwks: TestJWKSServer) -> ProviderSettings {
        var provider = provider
        provider.jwksURI = jwks.jwksURL
        return provider
    }

    static func claims(_ claims: [String: JSONValue]) -> [String: JSONValue] {
        let now = Int64(Date().timeIntervalSince1970)
        var all: [String: JSONValue] = ["iat": .number(String(now - 5)), "exp": .number(String(now + 3600))]
        all.merge(claims) { _, new in new }
        return all
    }

    // MARK: Google

    static func google(_ configuration: inout Configuration, _ jwks: TestJWKSServer, hostedDomains: [String] = []) {
        var provider = ProviderSettings(name: "google", type: .google)
        provider.audiences = ["1234-abc.apps.googleusercontent.com"]
        provider.hostedDomains = hostedDomains
        configuration.providers = [only(provider, jwks: jwks)]
    }

    static func googleToken(issuer: String = "https://accounts.google.com", extra: [String: JSONValue] = [:]) -> String {
        var values: [String: JSONValue] = [
            "iss": .string(issuer), "azp": .string("1234-abc.apps.googleusercontent.com"),
            "aud": .string("1234-abc.apps.googleusercontent.com"), "sub": .string("110169484474386276334"),
            "email": .string("ada@example.com"), "email_verified": .bool(true), "name": .string("Ada Lovelace"),
            "picture": .string("https://lh3.googleusercontent.com/a/x"),
        ]
        values.merge(extra) { _, new in new }
        return TestSigner.rsa.token(claims: claims(values))
    }

    @Test func googleAcceptsBothIssuerFormsAndForwardsTheProfile() async throws {
        try await TestEnvironment.run(signers: [.rsa], configure: { Self.google(&$0, $1) }) { (env: TestEnvironment) async throws in
            for issuer in ["https://accounts.google.com", "accounts.google.com"] {
                #expect(try await env.request("/x", token: Self.googleToken(issuer: issuer)).status == 200)
            }
            let received = try #require(env.upstream.last)
            #expect(received.value("x-auth-provider") == "google")
            #expect(received.value("x-auth-subject") == "110169484474386276334")
            #expect(received.value("x-auth-picture") == "https://lh3.googleusercontent.com/a/x")
            let otherClient = Self.googleToken(extra: ["aud": .string("9999-other.apps.googleusercontent.com")])
            #expect(try await env.request("/x", token: otherClient).json?["reason"] == .string("wrong_audience"))
            let http = Self.googleToken(issuer: "http://accounts.google.com")
            #expect(try await env.request("/x", token: http).json?["reason"] == .string("unknown_issuer"))
        }
    }

    @Test func googleHostedDomainRestriction() async throws {
        try await TestEnvironment.run(signers: [.rsa], configure: { Self.google(&$0, $1, hostedDomains: ["example.com"]) }) {
            (env: TestEnvironment) async throws in
            #expect(try await env.request("/x", token: Self.googleToken(extra: ["hd": .string("example.com")])).status == 200)
            let consumer = try await env.request("/x", token: Self.googleToken())
            #expect(consumer.json?["reason"] == .string("invalid_claims"))
            let otherDomain = try await env.request("/x", token: Self.googleToken(extra: ["hd": .string("evil.com")]))
            #expect(otherDomain.json?["reason"] == .string("invalid_claims"))
        }
    }

    // MARK: Apple

    static func apple(_ configuration: inout Configuration, _ jwks: TestJWKSServer) {
        var provider = ProviderSettings(name: "apple", type: .apple)
        provider.audiences = ["com.example.app"]
        configuration.providers = [only(provider, jwks: jwks)]
    }

    static func appleToken(_ extra: [String: JSONValue]) -> String {
        var values: [String: JSONValue] = [
            "iss": .string("https://appleid.apple.com"), "aud": .string("com.example.app"), "sub": .string("001234.abcd.1234"),
            "email": .string("x7@privaterelay.appleid.com"), "auth_time": .number("1700000000"), "nonce_supported": .bool(true),
        ]
        values.merge(extra) { _, new in new }
        return TestSigner.rsa.token(claims: claims(values))
    }

    @Test func appleStringBooleansAreAcceptedAndForwardedAsBooleans() async throws {
        try await TestEnvironment.run(signers: [.rsa], configure: { Self.apple(&$0, $1) }) { (env: TestEnvironment) async throws in
            let strings = Self.appleToken(["email_verified": .string("true"), "is_private_email": .string("true")])
            #expect(try await env.request("/x", token: strings).status == 200)
            #expect(env.upstream.last?.value("x-auth-email-verified") == "true")
            let falseString = Self.appleToken(["email_verified": .string("false")])
            #expect(try await env.request("/x", token: falseString).status == 200)
            #expect(env.upstream.last?.value("x-auth-email-verified") == "false")
            let boolean = Self.appleToken(["email_verified": .bool(true)])
            #expect(try await env.request("/x", token: boolean).status == 200)
            #expect(env.upstream.last?.value("x-auth-email-verified") == "true")
            let nonsense = try await env.request("/x", token: Self.appleToken(["email_verified": .string("yes")]))
            #expect(nonsense.json?["reason"] == .string("invalid_claims"))
            let otherApp = try await env.request("/x", token: Self.appleToken(["aud": .string("com.evil.app")]))
            #expect(otherApp.json?["reason"] == .string("wrong_audience"))
        }
    }

    @Test func appleStringBooleanSatisfiesRequireEmailVerified() async throws {
        try await TestEnvironment.run(signers: [.rsa], configure: { configuration, jwks in
            Self.apple(&configuration, jwks)
            var route = RouteSettings(match: .prefix("/"))
            route.requireEmailVerified = true
            configuration.routes = [route]
        }) { (env: TestEnvironment) async throws in
            #expect(try await env.request("/x", token: Self.appleToken(["email_verified": .string("true")])).status == 200)
            #expect(try await env.request("/x", token: Self.appleToken(["email_verified": .string("false")])).status == 403)
        }
    }

    // MARK: Firebase

    static func firebase(_ configuration: inout Configuration, _ jwks: TestJWKSServer) {
        var provider = ProviderSettings(name: "firebase", type: .firebase)
        provider.projectID = "my-project"
        configuration.providers = [only(provider, jwks: jwks)]
    }

    static func firebaseToken(project: String = "my-project", audience: String? = nil, _ extra: [String: JSONValue] = [:]) -> String {
        let now = Int64(Date().timeIntervalSince1970)
        var values: [String: JSONValue] = [
            "iss": .string("https://securetoken.google.com/\(project)"), "aud": .string(audience ?? project),
            "auth_time": .number(String(now - 60)), "user_id": .string("kZ3x"), "sub": .string("kZ3x"),
            "email": .string("ada@example.com"), "email_verified": .bool(false),
            "firebase": .object(["identities": .object([:]), "sign_in_provider": .string("google.com")]),
        ]
        values.merge(extra) { _, new in new }
        return TestSigner.rsa.token(claims: claims(values))
    }

    @Test func firebaseTokenOfTheProjectIsForwardedWithItsSignInProvider() async throws {
        try await TestEnvironment.run(signers: [.rsa], configure: { Self.firebase(&$0, $1) }) { (env: TestEnvironment) async throws in
            #expect(try await env.request("/x", token: Self.firebaseToken()).status == 200)
            let received = try #require(env.upstream.last)
            #expect(received.value("x-auth-sign-in-provider") == "google.com")
            #expect(received.value("x-auth-email-verified") == "false")
        }
    }

    @Test func firebaseRejectsOtherProjectsAndBadSubjectOrAuthTime() async throws {
        try await TestEnvironment.run(signers: [.rsa], configure: { Self.firebase(&$0, $1) }) { (env: TestEnvironment) async throws in
            let otherProject = try await env.request("/x", token: Self.firebaseToken(project: "other-project"))
            #expect(otherProject.json?["reason"] == .string("unknown_issuer"))
            let otherAudience = try await env.request("/x", token: Self.firebaseToken(audience: "other-project"))
            #expect(otherAudience.json?["reason"] == .string("wrong_audience"))
            let now = Int64(Date().timeIntervalSince1970)
            let cases: [[String: JSONValue]] = [
                ["sub": .string("")], ["sub": .string(String(repeating: "a", count: 129))],
                ["auth_time": .number(String(now + 3600))], ["auth_time": .string("yesterday")],
            ]
            for extra in cases {
                let response = try await env.request("/x", token: Self.firebaseToken(extra))
                #expect(response.json?["reason"] == .string("invalid_claims"), "\(extra)")
            }
            var noAuthTime = Self.claims(["iss": .string("https://securetoken.google.com/my-project"), "aud": .string("my-project"), "sub": .string("u")])
            noAuthTime["auth_time"] = nil
            let missing = try await env.request("/x", token: TestSigner.rsa.token(claims: noAuthTime))
            #expect(missing.json?["reason"] == .string("invalid_claims"))
            try await env.expectNothingReachedUpstream()
        }
    }

    // MARK: Cognito

    static let cognitoIssuer = "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_AbCdEf123"

    static func cognito(_ configuration: inout Configuration, _ jwks: TestJWKSServer, tokenUse: ProviderSettings.TokenUse) {
        var provider = ProviderSettings(name: "cognito", type: .cognito)
        provider.region = "eu-west-1"
        provider.userPoolID = "eu-west-1_AbCdEf123"
        provider.clientIDs = ["4h2k1example"]
        provider.tokenUse = tokenUse
        configuration.providers = [only(provider, jwks: jwks)]
    }

    static func cognitoAccessToken(clientID: String = "4h2k1example", _ extra: [String: JSONValue] = [:]) -> String {
        var values: [String: JSONValue] = [
            "iss": .string(cognitoIssuer), "sub": .string("8f2e-1111"), "token_use": .string("access"), "client_id": .string(clientID),
            "scope": .string("aws.cognito.signin.user.admin orders/read"), "username": .string("ada"), "auth_time": .number("1700000000"),
            "cognito:groups": .array([.string("admins")]), "jti": .string("j-1"), "origin_jti": .string("o-1"),
        ]
        values.merge(extra) { _, new in new }
        return TestSigner.rsa.token(claims: claims(values))
    }

    static func cognitoIDToken(audience: String = "4h2k1example") -> String {
        TestSigner.rsa.token(claims: claims([
            "iss": .string(cognitoIssuer), "sub": .string("8f2e-1111"), "token_use": .string("id"), "aud": .string(audience),
            "cognito:username": .string("ada"), "email": .string("ada@example.com"), "email_verified": .bool(true),
        ]))
    }

    @Test func cognitoAccessTokenIsAcceptedWithUsernameScopesAndGroups() async throws {
        try await TestEnvironment.run(signers: [.rsa], configure: { configuration, jwks in
            Self.cognito(&configuration, jwks, tokenUse: .access)
            var scoped = RouteSettings(match: .prefix("/orders"))
            scoped.scopes = ["orders/read"]
            var admin = RouteSettings(match: .prefix("/admin"))
            admin.groups = ["admins"]
            var writers = RouteSettings(match: .prefix("/write"))
            writers.scopes = ["orders/write"]
            configuration.routes = [scoped, admin, writers]
        }) { (env: TestEnvironment) async throws in
            let token = Self.cognitoAccessToken()
            #expect(try await env.request("/orders", token: token).status == 200)
            #expect(env.upstream.last?.value("x-auth-username") == "ada")
            #expect(try await env.request("/admin", token: token).status == 200)
            #expect(try await env.request("/write", token: token).status == 403)
            let wrongClient = try await env.request("/orders", token: Self.cognitoAccessToken(clientID: "someone-else"))
            #expect(wrongClient.json?["reason"] == .string("wrong_audience"))
            let idToken = try await env.request("/orders", token: Self.cognitoIDToken())
            #expect(idToken.json?["reason"] == .string("invalid_claims"))
        }
    }

    @Test func cognitoIDTokenProviderRejectsAccessTokens() async throws {
        try await TestEnvironment.run(signers: [.rsa], configure: { Self.cognito(&$0, $1, tokenUse: .id) }) { (env: TestEnvironment) async throws in
            #expect(try await env.request("/x", token: Self.cognitoIDToken()).status == 200)
            #expect(env.upstream.last?.value("x-auth-username") == "ada")
            #expect(env.upstream.last?.value("x-auth-email") == "ada@example.com")
            let access = try await env.request("/x", token: Self.cognitoAccessToken())
            #expect(access.json?["reason"] == .string("invalid_claims"))
            let otherClient = try await env.request("/x", token: Self.cognitoIDToken(audience: "other"))
            #expect(otherClient.json?["reason"] == .string("wrong_audience"))
        }
    }

    @Test func cognitoAnyAcceptsBoth() async throws {
        try await TestEnvironment.run(signers: [.rsa], configure: { Self.cognito(&$0, $1, tokenUse: .any) }) { (env: TestEnvironment) async throws in
            #expect(try await env.request("/x", token: Self.cognitoIDToken()).status == 200)
            #expect(try await env.request("/x", token: Self.cognitoAccessToken()).status == 200)
            let noUse = try await env.request("/x", token: Self.cognitoAccessToken(["token_use": .string("refresh")]))
            #expect(noUse.json?["reason"] == .string("invalid_claims"))
        }
    }

    // MARK: Per-provider headers

    @Test func providerHeadersOverrideAndExtendTheGlobalMap() async throws {
        try await TestEnvironment.run(signers: [.rsa], configure: { configuration, jwks in
            Self.google(&configuration, jwks)
            configuration.providers[0].headers = [
                HeaderMapping(name: "X-Auth-Email", claimPath: "alt_email"), HeaderMapping(name: "X-Auth-Domain", claimPath: "hd"),
            ]
            var apple = ProviderSettings(name: "apple", type: .apple)
            apple.audiences = ["com.example.app"]
            apple.jwksURI = jwks.jwksURL
            configuration.providers.append(apple)
        }) { (env: TestEnvironment) async throws in
            let google = Self.googleToken(extra: ["alt_email": .string("ada@work.example"), "hd": .string("work.example")])
            #expect(try await env.request("/x", token: google).status == 200)
            #expect(env.upstream.last?.value("x-auth-email") == "ada@work.example")
            #expect(env.upstream.last?.value("x-auth-domain") == "work.example")
            // The other provider keeps the global map.
            #expect(try await env.request("/x", token: Self.appleToken(["email_verified": .bool(true)])).status == 200)
            #expect(env.upstream.last?.value("x-auth-email") == "x7@privaterelay.appleid.com")
            #expect(env.upstream.last?.value("x-auth-domain") == nil)
        }
    }

    // MARK: Cognito userinfo

    @Test func cognitoUserinfoEnrichesAccessTokensOnceForManyRequests() async throws {
        try await TestEnvironment.run(signers: [.rsa], configure: { configuration, jwks in
            Self.cognito(&configuration, jwks, tokenUse: .access)
            configuration.providers[0].userinfo = true
            configuration.providers[0].domain = jwks.baseURL
            jwks.update {
                $0.userinfo = "{\"sub\":\"8f2e-1111\",\"email\":\"ada@example.com\",\"email_verified\":\"true\",\"name\":\"Ada\",\"username\":\"evil\"}"
            }
        }) { (env: TestEnvironment) async throws in
            let token = Self.cognitoAccessToken()
            try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<20 { group.addTask { try await env.request("/x", token: token).status } }
                for try await status in group { #expect(status == 200) }
            }
            #expect(env.jwks.userinfoCount == 1)
            let received = try #require(env.upstream.last)
            #expect(received.value("x-auth-email") == "ada@example.com")
            #expect(received.value("x-auth-email-verified") == "true")
            #expect(received.value("x-auth-name") == "Ada")
            #expect(received.value("x-auth-username") == "ada")  // the signed token wins
        }
    }

    @Test func cognitoUserinfoFailureStillForwardsWithoutProfile() async throws {
        try await TestEnvironment.run(signers: [.rsa], configure: { configuration, jwks in
            Self.cognito(&configuration, jwks, tokenUse: .access)
            configuration.providers[0].userinfo = true
            configuration.providers[0].userinfoURI = jwks.baseURL.appendingPathComponent("oauth2/userInfo")
            jwks.update { $0.userinfoStatus = .internalServerError }
        }) { (env: TestEnvironment) async throws in
            let token = Self.cognitoAccessToken()
            let response = try await env.request("/x", token: token)
            #expect(response.status == 200)
            #expect(env.upstream.last?.value("x-auth-email") == nil)
            #expect(env.upstream.last?.value("x-auth-subject") == "8f2e-1111")
            #expect(env.failureLog.isEmpty)
            // The failure is remembered for a while: the next requests do not wait on the endpoint again.
            #expect(try await env.request("/x", token: token).status == 200)
            #expect(env.jwks.userinfoCount == 1)
        }
    }

    @Test func cognitoUserinfoForAnotherSubjectIsIgnored() async throws {
        try await TestEnvironment.run(signers: [.rsa], configure: { configuration, jwks in
            Self.cognito(&configuration, jwks, tokenUse: .access)
            configuration.providers[0].userinfo = true
            configuration.providers[0].domain = jwks.baseURL
            jwks.update { $0.userinfo = "{\"sub\":\"someone-else\",\"email\":\"mallory@example.com\"}" }
        }) { (env: TestEnvironment) async throws in
            #expect(try await env.request("/x", token: Self.cognitoAccessToken()).status == 200)
            #expect(env.upstream.last?.value("x-auth-email") == nil)
        }
    }

    // MARK: OIDC discovery

    @Test func oidcProviderTakesItsKeysFromDiscovery() async throws {
        try await TestEnvironment.run(signers: [.rsa], configure: { configuration, jwks in
            let issuer = "http://127.0.0.1:\(jwks.port)"
            jwks.update { $0.discovery = "{\"issuer\":\"\(issuer)\",\"jwks_uri\":\"\(jwks.jwksURL.absoluteString)\"}" }
            var provider = ProviderSettings(name: "corp", type: .oidc)
            provider.issuer = issuer
            provider.audiences = ["api://orders"]
            configuration.providers = [provider]
        }) { (env: TestEnvironment) async throws in
            let token = TestSigner.rsa.token(claims: Self.claims([
                "iss": .string("http://127.0.0.1:\(env.jwks.port)"), "aud": .string("api://orders"), "sub": .string("u1"),
            ]))
            #expect(try await env.request("/x", token: token).status == 200)
        }
    }

    @Test func oidcDiscoveryWithAnotherIssuerIsRefused() async throws {
        try await TestEnvironment.run(signers: [.rsa], waitForKeys: false, configure: { configuration, jwks in
            jwks.update { $0.discovery = "{\"issuer\":\"https://evil.test\",\"jwks_uri\":\"\(jwks.jwksURL.absoluteString)\"}" }
            var provider = ProviderSettings(name: "corp", type: .oidc)
            provider.issuer = "http://127.0.0.1:\(jwks.port)"
            provider.audiences = ["api://orders"]
            configuration.providers = [provider]
        }) { (env: TestEnvironment) async throws in
            // Discovery has run (and been judged) once readiness names the mismatch.
            var readiness = try await env.admin("/readyz")
            for _ in 0..<500 where !readiness.body.contains("does not equal") {
                try await Task.sleep(for: .milliseconds(10))
                readiness = try await env.admin("/readyz")
            }
            #expect(env.jwks.discoveryCount >= 1)
            #expect(readiness.status == 503)
            #expect(readiness.body.contains("does not equal"), "\(readiness.body)")
            #expect(env.jwks.fetchCount == 0, "the JWKS a hijacked discovery document names is never fetched")
            // Requests are answered 503 keys_unavailable: the provider has no keys it may use.
            let token = TestSigner.rsa.token(claims: Claims.valid(extra: ["iss": .string("http://127.0.0.1:\(env.jwks.port)"),
                                                                            "aud": .string("api://orders")]))
            let response = try await env.request("/v1/orders", token: token)
            #expect(response.status == 503)
            #expect(response.json?["reason"] == .string("keys_unavailable"))
            #expect(env.jwks.fetchCount == 0)
        }
    }
}
