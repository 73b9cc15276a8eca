import Foundation
@testable import Gatehouse
import GatehouseTokens
import NIOHTTP1
import Testing
import GatehouseSyntax
import GatehouseConfig
import GatehouseAuth
import GatehouseExchange
import GatehouseVocabulary

/// Sign-out beyond this replica: the provider's revocation endpoint, the request body, durable stores.
@Suite(.timeLimit(.minutes(2)))
struct SignOutTests {
    private static let providerDownMessage = "Authentication service temporarily unavailable, cannot sign out. Please try again."

    private static func withRevocationEndpoint(_ configuration: inout Configuration, _ jwks: TestJWKSServer) {
        configuration.providers[0].revocationEndpoint = jwks.baseURL.appendingPathComponent("oauth2/revoke")
    }

    @Test func aRefreshTokenInTheBodyIsRevokedAtTheProvider() async throws {
        try await TestEnvironment.run(configure: Self.withRevocationEndpoint) { (env: TestEnvironment) async throws in
            let token = TestSigner.ec.token(claims: Claims.valid(extra: ["jti": .string("s-1")]))
            let form = try await env.request(
                "/.gatehouse/signout", method: .POST, token: token,
                headers: [("Content-Type", "application/x-www-form-urlencoded")], body: "refresh_token=r%2B1")
            #expect(form.status == 200)
            #expect(env.jwks.revokeRequests == ["token=r%2B1&token_type_hint=refresh_token"])
            #expect(try await env.request("/x", token: token).status == 401)
            let other = TestSigner.ec.token(claims: Claims.valid(extra: ["jti": .string("s-2")]))
            let json = try await env.request(
                "/.gatehouse/signout", method: .POST, token: other, headers: [("Content-Type", "application/json")],
                body: #"{"refresh_token":"r 2"}"#)
            #expect(json.status == 200)
            #expect(env.jwks.revokeRequests.last == "token=r+2&token_type_hint=refresh_token")
            // Without a refresh token the provider is not called.
            let third = TestSigner.ec.token(claims: Claims.valid(extra: ["jti": .string("s-3")]))
            #expect(try await env.request("/.gatehouse/signout", method: .POST, token: third).status == 200)
            #expect(env.jwks.revokeRequests.count == 2)
        }
    }

    @Test func providerDownIs503ButTheTokenIsRevokedHereAndARetrySucceeds() async throws {
        try await TestEnvironment.run(configure: Self.withRevocationEndpoint) { (env: TestEnvironment) async throws in
            env.jwks.update { $0.revokeStatus = .internalServerError }
            let token = TestSigner.rsa.token(claims: Claims.valid())
            let signout: (TestEnvironment) async throws -> TestEnvironment.Response = { env in
                try await env.request(
                    "/.gatehouse/signout", method: .POST, token: token,
                    headers: [("Content-Type", "application/x-www-form-urlencoded")], body: "refresh_token=r-1")
            }
            let failed = try await signout(env)
            #expect(failed.status == 503)
            #expect(failed.json?["error"] == .string("temporarily_unavailable"))
            #expect(failed.json?["message"] == .string(Self.providerDownMessage))
            #expect(failed.headers.first(name: "retry-after") != nil)
            // Recorded locally first: the access token no longer works.
            #expect(try await env.request("/x", token: token).json?["reason"] == .string("revoked"))
            env.jwks.update { $0.revokeStatus = .ok }
            #expect(try await signout(env).status == 200)
            #expect(env.jwks.revokeRequests.count == 2)
        }
    }

    @Test func unreachableProviderIs503Too() async throws {
        try await TestEnvironment.run(configure: { configuration, _ in
            configuration.providers[0].revocationEndpoint = URL(string: "http://127.0.0.1:1/oauth2/revoke")
        }) { (env: TestEnvironment) async throws in
            let token = TestSigner.ec.token(claims: Claims.valid())
            let response = try await env.request(
                "/.gatehouse/signout", method: .POST, token: token, headers: [("Content-Type", "application/json")],
                body: #"{"refresh_token":"r"}"#)
            #expect(response.status == 503)
            #expect(response.json?["message"] == .string(Self.providerDownMessage))
        }
    }

    @Test func aRefreshTokenTheProviderNoLongerKnowsCountsAsSignedOut() async throws {
        try await TestEnvironment.run(configure: Self.withRevocationEndpoint) { (env: TestEnvironment) async throws in
            env.jwks.update {
                $0.revokeStatus = .badRequest
                $0.revokeBody = #"{"error":"invalid_token"}"#
            }
            let response = try await env.request(
                "/.gatehouse/signout", method: .POST, token: TestSigner.ec.token(claims: Claims.valid()),
                headers: [("Content-Type", "application/x-www-form-urlencoded")], body: "refresh_token=gone")
            #expect(response.status == 200)
        }
    }

    @Test func malformedOrOversizedBodiesAreRefusedWithoutSigningOut() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            let token = TestSigner.ec.token(claims: Claims.valid())
            let badJSON = try await env.request(
                "/.gatehouse/signout", method: .POST, token: token, headers: [("Content-Type", "application/json")], body: "{")
            #expect(badJSON.status == 400)
            #expect(badJSON.json?["error"] == .string("invalid_request"))
            let huge = try await env.request(
                "/.gatehouse/signout", method: .POST, token: token, headers: [("Content-Type", "application/json")],
                body: String(repeating: " ", count: SignOutRequest.maxBodyBytes + 1))
            #expect(huge.status == 413)
            #expect(try await env.request("/x", token: token).status == 200)
        }
    }

    @Test func sqliteStoreKeepsSignOutsAcrossARestart() async throws {
        let directory = NSTemporaryDirectory() + "gatehouse-sqlite-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let useFile: (inout Configuration, TestJWKSServer) -> Void = { configuration, _ in
            var revocation = RevocationSettings()
            revocation.store = "sqlite:\(directory)/revocations.db"
            configuration.revocation = revocation
        }
        let now = Int64(Date().timeIntervalSince1970)
        let token = TestSigner.ec.token(claims: Claims.valid(extra: ["jti": .string("durable-1")]))
        let older = TestSigner.ec.token(claims: Claims.valid(subject: "user-9", extra: ["iat": .number(String(now - 60))]))
        try await TestEnvironment.run(configure: useFile) { (env: TestEnvironment) async throws in
            #expect(try await env.request("/.gatehouse/signout", method: .POST, token: token).status == 200)
            #expect(try await env.request("/.gatehouse/signout-everywhere", method: .POST, token: older).status == 200)
            let ready = try await env.admin("/readyz")
            #expect(ready.json?["revocation_store"]?.objectValue?["location"] == .string("sqlite:\(directory)/revocations.db"))
        }
        // A new process on the same file: both sign-outs still hold, other tokens pass.
        try await TestEnvironment.run(configure: useFile) { (env: TestEnvironment) async throws in
            #expect(try await env.request("/x", token: token).json?["reason"] == .string("revoked"))
            #expect(try await env.request("/x", token: older).json?["reason"] == .string("revoked"))
            #expect(try await env.request("/x", token: TestSigner.ec.token(claims: Claims.valid())).status == 200)
        }
    }

    /// R09: a token past its `exp` but inside the leeway still verifies, so its sign-out must hold: on the
    /// memory store after the next sign-out (which prunes), and on SQLite across a restart (which reloads).
    /// Before, the entry was dropped once `exp` had passed (or never applied) and the token was 200 again.
    @Test(arguments: [false, true])
    func aTokenSignedOutInsideItsLeewayStaysSignedOut(sqlite: Bool) async throws {
        let directory = NSTemporaryDirectory() + "gatehouse-leeway-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store: (inout Configuration, TestJWKSServer) -> Void = { configuration, _ in
            guard sqlite else { return }
            var revocation = RevocationSettings()
            revocation.store = "sqlite:\(directory)/revocations.db"
            configuration.revocation = revocation
        }
        let expiredInLeeway = TestSigner.ec.token(claims: Claims.valid(lifetime: -5, extra: ["jti": .string("in-leeway")]))
        try await TestEnvironment.run(configure: store) { (env: TestEnvironment) async throws in
            #expect(try await env.request("/x", token: expiredInLeeway).status == 200, "5 s past exp, inside the 60 s leeway")
            #expect(try await env.request("/.gatehouse/signout", method: .POST, token: expiredInLeeway).status == 200)
            #expect(try await env.request("/x", token: expiredInLeeway).json?["reason"] == .string("revoked"))
            let other = TestSigner.ec.token(claims: Claims.valid(subject: "user-2", extra: ["jti": .string("other")]))
            #expect(try await env.request("/.gatehouse/signout", method: .POST, token: other).status == 200)
            #expect(try await env.request("/x", token: expiredInLeeway).json?["reason"] == .string("revoked"))
        }
        guard sqlite else { return }
        try await TestEnvironment.run(configure: store) { (env: TestEnvironment) async throws in
            #expect(try await env.request("/x", token: expiredInLeeway).json?["reason"] == .string("revoked"), "after a restart")
        }
    }

    @Test func anUnusableSQLitePathKeepsTheReplicaUnreadyButServing() async throws {
        try await TestEnvironment.run(waitForKeys: false, configure: { configuration, _ in
            var revocation = RevocationSettings()
            revocation.store = "sqlite:/nonexistent-dir/for/sure/revocations.db"
            configuration.revocation = revocation
        }) { (env: TestEnvironment) async throws in
            // Wait (not a fixed sleep: the parallel suite slows both) for the keys and the store's first failure.
            for _ in 0..<500 {
                if env.gatehouse.keyStore.status().allSatisfy(\.usable), env.gatehouse.revocations.status.lastError != nil { break }
                try await Task.sleep(for: .milliseconds(10))
            }
            let ready = try await env.admin("/readyz")
            #expect(ready.status == 503)
            let store = ready.json?["revocation_store"]?.objectValue
            #expect(store?["loaded"] == .bool(false))
            #expect(store?["last_error"]?.stringValue != nil)
            let token = TestSigner.ec.token(claims: Claims.valid())
            #expect(try await env.request("/x", token: token).status == 200)
            let signout = try await env.request("/.gatehouse/signout", method: .POST, token: token)
            #expect(signout.status == 503)
            #expect(try await env.request("/x", token: token).status == 401)
        }
    }

    @Test func revocationEndpointsComeFromPresetsDiscoveryOrConfiguration() {
        var google = ProviderSettings(name: "g", type: .google)
        google.audiences = ["a"]
        var cognito = ProviderSettings(name: "c", type: .cognito)
        cognito.domain = URL(string: "https://auth.example.com")
        var corp = ProviderSettings(name: "o", type: .oidc)
        corp.issuer = "https://login.example.com"
        var own = ProviderSettings(name: "j", type: .jwks)
        own.revocationEndpoint = URL(string: "https://idp.example.com/revoke")
        let apple = ProviderSettings(name: "a", type: .apple)
        let endpoints = ProviderTokenRevoker.endpoints(for: [google, cognito, corp, own, apple])
        #expect(endpoints[0] == .url(URL(string: "https://oauth2.googleapis.com/revoke")!, sendsClientID: false))
        #expect(endpoints[1] == .url(URL(string: "https://auth.example.com/oauth2/revoke")!, sendsClientID: true))
        #expect(endpoints[2] == .discovery(issuer: "https://login.example.com"))
        #expect(endpoints[3] == .url(URL(string: "https://idp.example.com/revoke")!, sendsClientID: false))
        #expect(endpoints[4] == nil)
    }
}
