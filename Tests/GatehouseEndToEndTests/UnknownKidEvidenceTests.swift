import Foundation
@testable import Gatehouse
import NIOCore
import NIOHTTP1
import Testing
import GatehouseSyntax
import GatehouseConfig
import GatehouseTokens
import GatehouseAuth
import GatehouseVocabulary

/// 401 `unknown_key` only with evidence that the kid is not the provider's (docs/reference.md §3.8, docs/security.md
/// K03, K17, K18): a token signed by a key the provider publishes is never refused with 401, whatever other traffic
/// spent the refetch cooldown on.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct UnknownKidEvidenceTests {
    /// Issue 41: one token with a kid the provider does not publish spends the cooldown; the provider then rotates and
    /// signs with its new key. The first tokens of the new key get 503 with the cooldown's remainder as `Retry-After`
    /// (retry), never 401 (sign in again), and pass once a refetch may start.
    @Test func aNewKeyAfterAnUnrelatedUnknownKidIsRetriedNeverRefused() async throws {
        try await TestEnvironment.run(signers: [.rsa], configure: { configuration, _ in
            configuration.jwks.unknownKidCooldown = .seconds(2)
        }) { (env: TestEnvironment) async throws in
            let noise = try await env.request("/v1/orders", token: TestSigner.ec.with(keyID: "stale-client").token(claims: Claims.valid()))
            #expect(noise.status == 401 && noise.json?["reason"] == .string("unknown_key"))
            #expect(env.jwks.fetchCount == 2)

            let rotated = TestSigner.ec.with(keyID: "rotated")
            env.jwks.update { $0.body = TestSigner.jwks([.rsa, rotated]) }
            let token = rotated.token(claims: Claims.valid())
            let first = try await env.request("/v1/orders", token: token)
            #expect(first.status == 503, "the first token of the new key: \(first.status) \(first.body)")
            #expect(first.json?["reason"] == .string("keys_unavailable"))
            #expect(["1", "2"].contains(first.headers.first(name: "retry-after") ?? ""), "the cooldown's remainder, rounded up")
            try await Self.expectAdmitted(token, env)
        }
    }

    /// The same with the provider failing at the moment of the rotation: 503 while the cooldown lasts, 503 when the
    /// refetch after it fails, and the token admitted once the provider answers again; never 401.
    @Test func aNewKeyWhileTheProviderFailsIsRetriedNeverRefused() async throws {
        try await TestEnvironment.run(signers: [.rsa], configure: { configuration, _ in
            configuration.jwks.unknownKidCooldown = .milliseconds(500)
        }) { (env: TestEnvironment) async throws in
            let noise = try await env.request("/v1/orders", token: TestSigner.ec.with(keyID: "stale-client").token(claims: Claims.valid()))
            #expect(noise.status == 401)
            let rotated = TestSigner.ec.with(keyID: "rotated")
            env.jwks.update {
                $0.body = TestSigner.jwks([.rsa, rotated])
                $0.status = .internalServerError
            }
            let token = rotated.token(claims: Claims.valid())
            let fetchesAtRotation = env.jwks.fetchCount
            var statuses: [Int] = []
            // Through the cooldown and at least one failed refetch after it.
            while env.jwks.fetchCount < fetchesAtRotation + 1 || statuses.count < 2 {
                let response = try await env.request("/v1/orders", token: token)
                statuses.append(response.status)
                #expect(response.status == 503 && response.json?["reason"] == .string("keys_unavailable"), "\(response.status) \(response.body)")
                #expect(response.headers.first(name: "retry-after") == "1")
                if statuses.count > 400 { break }
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(env.jwks.fetchCount > fetchesAtRotation, "a refetch was tried once the cooldown was over")
            #expect(env.failureLog.last?["detail"]?.stringValue?.contains("refetching them failed") == true
                || env.failureLog.last?["detail"]?.stringValue?.contains("the last fetch of them failed") == true, "\(env.failureLogLines)")
            env.jwks.update { $0.status = .ok }
            try await Self.expectAdmitted(token, env)
        }
    }

    /// K17: a kid an earlier key set listed and a later fetch dropped is refused at once, with no fetch and without
    /// spending the cooldown: the next unknown kid is still refetched.
    @Test func aRetiredKidIsRefusedAtOnceWithoutSpendingTheCooldown() async throws {
        try await TestEnvironment.run(signers: [.rsa, .ec], configure: { configuration, _ in
            configuration.jwks.minRefresh = .seconds(1)
            configuration.jwks.maxRefresh = .seconds(1)
        }) { (env: TestEnvironment) async throws in
            #expect(try await env.request("/v1/orders", token: TestSigner.ec.token(claims: Claims.valid())).status == 200)
            // The provider retires the EC key; the scheduled refresh sees it go.
            env.jwks.update { $0.body = TestSigner.jwks([.rsa]) }
            let before = env.jwks.fetchCount
            #expect(await Contract.eventually { env.jwks.fetchCount > before && env.gatehouse.keyStore.status()[0].keyCount == 1 })
            let fetches = env.jwks.fetchCount

            let retired = try await env.request("/v1/orders", token: TestSigner.ec.token(claims: Claims.valid()))
            #expect(retired.status == 401 && retired.json?["reason"] == .string("unknown_key"))
            #expect(env.failureLog.last?["detail"] == .string("no key with this kid: the provider has retired it"))
            #expect(env.jwks.fetchCount == fetches, "no fetch for a retired kid")

            // The cooldown is unspent: a kid never seen is refetched at once (and refused with that evidence).
            let unknown = try await env.request("/v1/orders", token: TestSigner.ec.with(keyID: "never-seen").token(claims: Claims.valid()))
            #expect(unknown.status == 401)
            #expect(env.failureLog.last?["detail"] == .string("no key with this kid, even after a refetch"))
            #expect(env.jwks.fetchCount == fetches + 1)
        }
    }

    /// K18: a token issued more than the leeway before its provider's keys were listed names a kid the provider would
    /// have listed then: refused without a fetch. A key set a cache had held (`Age`) was listed that much earlier.
    @Test func aTokenIssuedBeforeTheKeysWereListedIsRefusedWithoutAFetch() async throws {
        try await TestEnvironment.run(signers: [.rsa]) { (env: TestEnvironment) async throws in
            let now = Int64(Date().timeIntervalSince1970)
            let old = TestSigner.ec.with(keyID: "old").token(claims: Claims.valid(extra: ["iat": .number(String(now - 3600))]))
            let fetches = env.jwks.fetchCount
            let response = try await env.request("/v1/orders", token: old)
            #expect(response.status == 401 && response.json?["reason"] == .string("unknown_key"))
            #expect(env.failureLog.last?["detail"]
                == .string("no key with this kid: the token was issued before the provider's keys were last listed, without it"))
            #expect(env.jwks.fetchCount == fetches)
        }
        try await TestEnvironment.run(signers: [.rsa], configure: { _, jwks in
            jwks.update { $0.age = "7200" }
        }) { (env: TestEnvironment) async throws in
            let now = Int64(Date().timeIntervalSince1970)
            let old = TestSigner.ec.with(keyID: "old").token(claims: Claims.valid(extra: ["iat": .number(String(now - 3600))]))
            let fetches = env.jwks.fetchCount
            let response = try await env.request("/v1/orders", token: old)
            #expect(response.status == 401)
            #expect(env.failureLog.last?["detail"] == .string("no key with this kid, even after a refetch"),
                    "a set two hours old says nothing of a token an hour old")
            #expect(env.jwks.fetchCount == fetches + 1)
        }
    }

    /// Polls with the token until it is admitted (at most 5 s); every answer before that is 503 with `Retry-After`.
    static func expectAdmitted(_ token: String, _ env: TestEnvironment) async throws {
        for _ in 0..<250 {
            let response = try await env.request("/v1/orders", token: token)
            if response.status == 200 { return }
            #expect(response.status == 503 && response.headers.first(name: "retry-after") != nil, "\(response.status) \(response.body)")
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("the token of the new key was never admitted")
    }
}
