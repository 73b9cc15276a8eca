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

/// The rotation-aware key cache, against a scriptable JWKS server: never a false 401, never a fetch storm.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct KeyCacheTests {
    @Test func fiveHundredConcurrentUnknownKidsCauseOneFetch() async throws {
        try await TestEnvironment.run(signers: [.rsa]) { (env: TestEnvironment) async throws in
            let before = env.jwks.fetchCount
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<500 {
                    group.addTask {
                        let token = TestSigner.ec.with(keyID: "storm-\(index)").token(claims: Claims.valid())
                        return try await env.request("/v1/orders", token: token).status
                    }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            // Those that arrived before the refetch ended have its evidence (401); the later ones have none, and the
            // cooldown allows no second fetch: 503, retry (docs/reference.md §3.8).
            #expect(statuses.count == 500 && statuses.allSatisfy { $0 == 401 || $0 == 503 })
            #expect(statuses.contains(401), "the request that caused the refetch has its evidence")
            #expect(env.jwks.fetchCount - before == 1)
            #expect(env.failureLog.count == 500)
            #expect(env.failureLog.allSatisfy { $0["reason"] == .string(($0["status"]?.integerValue == 401) ? "unknown_key" : "keys_unavailable") })
        }
    }

    /// K03: within `unknown_kid_cooldown` an unknown `kid` is answered without a fetch (said in the line's
    /// `detail`), even when the provider has since published it: 503 with the cooldown's remainder as
    /// `Retry-After` (nothing says the kid is not the provider's), never 401; once the cooldown is over it is fetched.
    @Test func unknownKidWithinTheCooldownIsAnsweredWithoutAFetch() async throws {
        let cooldown = Duration.seconds(1)
        try await TestEnvironment.run(signers: [.rsa], configure: { configuration, _ in
            configuration.jwks.unknownKidCooldown = cooldown
        }) { (env: TestEnvironment) async throws in
            let first = try await env.request("/x", token: TestSigner.ec.with(keyID: "new-1").token(claims: Claims.valid()))
            #expect(first.json?["reason"] == .string("unknown_key"))
            #expect(env.jwks.fetchCount == 2)
            let refetchedAt = try #require(env.jwks.fetchTimes.last)
            #expect(env.failureLog.last?["detail"] == .string("no key with this kid, even after a refetch"))
            // The provider now publishes it, but the cooldown has not passed: no second fetch.
            env.jwks.update { $0.body = TestSigner.jwks([.rsa, TestSigner.ec.with(keyID: "new-2")]) }
            let token = TestSigner.ec.with(keyID: "new-2").token(claims: Claims.valid())
            let second = try await env.request("/x", token: token)
            try #require(ContinuousClock.now - refetchedAt < cooldown, "the machine is too slow to ask within the cooldown")
            #expect(second.status == 503)
            #expect(second.json?["reason"] == .string("keys_unavailable"))
            #expect(second.headers.first(name: "retry-after") == "1", "the cooldown's remainder, rounded up")
            #expect(env.failureLog.last?["detail"]
                == .string("no key with this kid, and provider test's keys cannot be listed again now: refetch cooldown active"))
            #expect(env.jwks.fetchCount == 2)
            // Once the cooldown is over, the next unknown kid is fetched, and not before.
            var admitted = second.status == 200
            for _ in 0..<300 where !admitted {
                try await Task.sleep(for: .milliseconds(20))
                admitted = try await env.request("/x", token: token).status == 200
            }
            #expect(admitted)
            #expect(env.jwks.fetchCount == 3)
            let nextFetch = try #require(env.jwks.fetchTimes.last)
            // Measured where the fetches arrive: the first one's connection setup may have delayed it a little.
            #expect(nextFetch - refetchedAt >= cooldown - .milliseconds(100), "refetched \(nextFetch - refetchedAt) after the last one")
        }
    }

    @Test func identityProviderDownAfterAGoodFetchKeepsServing() async throws {
        try await TestEnvironment.run(signers: [.rsa], configure: { configuration, _ in
            configuration.jwks.unknownKidCooldown = .zero
        }) { (env: TestEnvironment) async throws in
            env.jwks.update { $0.status = .internalServerError }
            // An unknown kid forces a (failing) refetch; the last good keys stay.
            _ = try await env.request("/x", token: TestSigner.ec.with(keyID: "force").token(claims: Claims.valid()))
            #expect(env.jwks.fetchCount == 2)
            let response = try await env.request("/x", token: TestSigner.rsa.token(claims: Claims.valid()))
            #expect(response.status == 200)
            let readiness = try await env.admin("/readyz")
            #expect(readiness.status == 200)
            #expect(readiness.json?["providers"]?.arrayValue?.first?.objectValue?["last_error"]?.stringValue?.contains("500") == true)
        }
    }

    @Test func removedKeyIsRejectedAfterRefreshEvenIfCached() async throws {
        try await TestEnvironment.run(signers: [.rsa, .ec], configure: { configuration, _ in
            configuration.jwks.unknownKidCooldown = .zero
        }) { (env: TestEnvironment) async throws in
            let token = TestSigner.rsa.token(claims: Claims.valid())
            #expect(try await env.request("/x", token: token).status == 200)
            env.jwks.update { $0.body = TestSigner.jwks([.ec]) }
            _ = try await env.request("/x", token: TestSigner.ec.with(keyID: "trigger").token(claims: Claims.valid()))
            let response = try await env.request("/x", token: token)
            #expect(response.status == 401)
            #expect(response.json?["reason"] == .string("unknown_key"))
        }
    }

    @Test func aRepeatedBadSignatureIsRejectedUntilTheKeySetChanges() async throws {
        try await TestEnvironment.run(signers: [.rsa], configure: { configuration, _ in
            configuration.jwks.unknownKidCooldown = .zero
        }) { (env: TestEnvironment) async throws in
            // Signed by another key under the published kid: the signature does not verify.
            let forged = TestSigner.otherRSA.with(keyID: "rsa-1").token(claims: Claims.valid())
            let rejectedHits = "gatehouse_verify_cache_total{result=\"rejected\"}"
            let hitsBefore = try await env.metric(rejectedHits)
            for _ in 0..<3 {
                let response = try await env.request("/x", token: forged)
                #expect(response.status == 401)
                #expect(response.json?["reason"] == .string("bad_signature"))
            }
            // Every rejection is logged, remembered or not; the second and third were answered from the rejected cache.
            #expect(env.failureLog.filter { $0["reason"] == .string("bad_signature") }.count == 3)
            #expect(try await env.metric(rejectedHits) == hitsBefore + 2)
            // The provider now publishes that key under that kid: a remembered rejection must not outlive the old key set.
            env.jwks.update { $0.body = TestSigner.jwks([TestSigner.otherRSA.with(keyID: "rsa-1")]) }
            _ = try await env.request("/x", token: TestSigner.ec.with(keyID: "trigger").token(claims: Claims.valid()))
            #expect(try await env.request("/x", token: forged).status == 200)
            #expect(try await env.metric(rejectedHits) == hitsBefore + 2, "a rejection outlived its key set")
        }
    }

    @Test func cacheControlMaxAgeIsHonouredAndClamped() async throws {
        try await TestEnvironment.run(signers: [.rsa], configure: { configuration, jwks in
            configuration.jwks.minRefresh = .milliseconds(300)
            configuration.jwks.maxRefresh = .seconds(1)
            jwks.update { $0.cacheControl = "public, max-age=3600" }
        }) { (env: TestEnvironment) async throws in
            /// Waits for `count` more fetches (bounded) and returns the gaps between the fetches from the
            /// first of them on: a refresh is scheduled one refresh interval after the fetch before it.
            func gaps(ofNext count: Int) async throws -> [Duration] {
                let start = env.jwks.fetchCount
                for _ in 0..<1000 where env.jwks.fetchCount < start + count { try await Task.sleep(for: .milliseconds(10)) }
                let times = Array(env.jwks.fetchTimes.dropFirst(max(start - 1, 0)).prefix(count + 1))
                try #require(times.count == count + 1, "only \(times.count - 1) of \(count) refreshes came")
                return zip(times.dropFirst(), times).map { $0 - $1 }
            }
            // max-age 3600 clamped to max_refresh 1 s: refreshed about every second with no traffic at all.
            let clampedDown = try await gaps(ofNext: 2)
            #expect(clampedDown.allSatisfy { $0 > .milliseconds(900) && $0 < .milliseconds(2500) }, "\(clampedDown)")
            // max-age 0 clamped up to min_refresh 300 ms: about three a second, not a storm. The first gap may
            // still be the last 1 s interval.
            env.jwks.update { $0.cacheControl = "max-age=0" }
            let clampedUp = try await gaps(ofNext: 4).dropFirst()
            #expect(clampedUp.allSatisfy { $0 > .milliseconds(250) && $0 < .milliseconds(900) }, "\(clampedUp)")
        }
    }

    @Test func persistedKeysServeAcrossARestartWhileTheProviderIsDown() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-jwks-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let token = TestSigner.rsa.token(claims: Claims.valid())
        try await TestEnvironment.run(signers: [.rsa], configure: { configuration, _ in
            configuration.jwks.cacheDirectory = directory
        }) { (env: TestEnvironment) async throws in
            #expect(try await env.request("/x", token: token).status == 200)
        }
        #expect(FileManager.default.fileExists(atPath: directory + "/test.jwks"))
        try await TestEnvironment.run(signers: [.rsa], configure: { configuration, jwks in
            configuration.jwks.cacheDirectory = directory
            jwks.update { $0.status = .serviceUnavailable }
        }) { (env: TestEnvironment) async throws in
            #expect(try await env.request("/x", token: token).status == 200)
            #expect(try await env.admin("/readyz").status == 200)
        }
    }

    @Test func slowIdentityProviderIsAnswered503InBoundedTime() async throws {
        try await TestEnvironment.run(waitForKeys: false, configure: { configuration, jwks in
            configuration.jwks.fetchTimeout = .milliseconds(500)
            jwks.update { $0.delay = .seconds(3) }
        }) { (env: TestEnvironment) async throws in
            let started = ContinuousClock.now
            let response = try await env.request("/x", token: TestSigner.rsa.token(claims: Claims.valid()))
            #expect(response.status == 503)
            #expect(ContinuousClock.now - started < .seconds(1))
        }
    }

    @Test func slowRefetchForAnUnknownKidIsBoundedByTheFetchTimeout() async throws {
        try await TestEnvironment.run(signers: [.rsa], configure: { configuration, _ in
            configuration.jwks.fetchTimeout = .milliseconds(500)
        }) { (env: TestEnvironment) async throws in
            env.jwks.update { $0.delay = .seconds(3) }
            let started = ContinuousClock.now
            let response = try await env.request("/x", token: TestSigner.ec.with(keyID: "late").token(claims: Claims.valid()))
            // A refetch that timed out failed: retry later (503), not sign in again (K16).
            #expect(response.status == 503)
            #expect(response.json?["reason"] == .string("keys_unavailable"))
            #expect(ContinuousClock.now - started < .milliseconds(1500))
        }
    }

    /// K16: a key rotation while the JWKS endpoint is down. A token naming the new `kid` forces a refetch
    /// that fails: 503 `keys_unavailable` with `Retry-After` (the client retries), not 401 `unknown_key`
    /// (sign in again), also within the cooldown; the old key keeps serving, and once the endpoint is back
    /// and the cooldown over, the new key is fetched and the same token admitted.
    @Test func anUnknownKidWhoseRefetchFailsIsAnswered503NotUnknownKey() async throws {
        try await TestEnvironment.run(signers: [.rsa], configure: { configuration, _ in
            configuration.jwks.unknownKidCooldown = .milliseconds(300)
        }) { (env: TestEnvironment) async throws in
            env.jwks.update { $0.status = .internalServerError }
            let rotated = TestSigner.ec.with(keyID: "rotated")
            let token = rotated.token(claims: Claims.valid())
            let first = try await env.request("/v1/orders", token: token)
            #expect(first.status == 503)
            #expect(first.json?["reason"] == .string("keys_unavailable"))
            #expect(first.headers.first(name: "retry-after") == "1", "when a refetch may start again: the 300 ms cooldown, rounded up")
            #expect(env.jwks.fetchCount == 2, "one refetch")
            let withinCooldown = try await env.request("/v1/orders", token: token)
            #expect(withinCooldown.status == 503, "the last refetch failed: still retryable within the cooldown")
            #expect(env.jwks.fetchCount == 2)
            #expect(env.failureLog.map { $0["reason"] } == [.string("keys_unavailable"), .string("keys_unavailable")])
            #expect(env.failureLog.first?["kid"] == .string("rotated"))
            #expect(try await env.request("/v1/orders", token: TestSigner.rsa.token(claims: Claims.valid())).status == 200)
            #expect(env.upstream.requestCount == 1)

            env.jwks.update {
                $0.status = .ok
                $0.body = TestSigner.jwks([.rsa, rotated])
            }
            var admitted = 0
            for _ in 0..<100 where admitted != 200 {
                admitted = try await env.request("/v1/orders", token: token).status
                if admitted != 200 { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(admitted == 200, "the new key is fetched once the endpoint is back")
        }
    }

    /// K05: while refreshes fail the last good keys keep serving (stale-if-error), but only until they are
    /// `max_stale` old: then a valid token, cached or not, gets 503 `keys_unavailable` with `Retry-After`,
    /// one failure-log line each, and nothing reaches the upstream.
    @Test func keysOlderThanMaxStaleStopBeingUsed() async throws {
        let maxStale = Duration.seconds(4)
        try await TestEnvironment.run(signers: [.rsa], configure: { configuration, _ in
            configuration.jwks.minRefresh = .milliseconds(200)
            configuration.jwks.maxRefresh = .milliseconds(200)
            configuration.jwks.maxStale = maxStale
        }) { (env: TestEnvironment) async throws in
            let cached = TestSigner.rsa.token(claims: Claims.valid())
            #expect(try await env.request("/x", token: cached).status == 200)
            // The provider goes away: every refresh from now on fails.
            env.jwks.update { $0.status = .serviceUnavailable }
            let fetchesAtOutage = env.jwks.fetchCount
            let keys = { env.gatehouse.keyStore.status()[0] }
            for _ in 0..<200 where keys().lastError == nil { try await Task.sleep(for: .milliseconds(10)) }
            #expect(keys().lastError?.contains("503") == true)
            let lastGoodFetch = try #require(keys().lastFetch)
            let staleAt = lastGoodFetch.addingTimeInterval(Double(maxStale.components.seconds) + Double(maxStale.components.attoseconds) / 1e18)
            // Stale-if-error: after several failed refreshes (retried about every 0.5 s), still before `max_stale`,
            // the old keys serve, both for the cached token and for one that has to be verified against them.
            for _ in 0..<500 where env.jwks.fetchCount - fetchesAtOutage < 2 { try await Task.sleep(for: .milliseconds(10)) }
            #expect(env.jwks.fetchCount - fetchesAtOutage >= 2, "refreshes kept being tried and kept failing")
            try #require(Date() < staleAt.addingTimeInterval(-1), "the failed refreshes took most of max_stale: the machine is too slow for this test")
            #expect(try await env.request("/x", token: cached).status == 200)
            let fresh = TestSigner.rsa.token(claims: Claims.valid(extra: ["jti": .string("before")]))
            #expect(try await env.request("/x", token: fresh).status == 200)
            #expect(try await env.admin("/readyz").status == 200)
            #expect(env.failureLog.isEmpty)
            let forwarded = env.upstream.requestCount
            #expect(forwarded == 3)
            // Past `max_stale`, and not before: the keys are no longer used. The cached token is tried until it is
            // refused (each 200 before then is one more forward).
            var refusedAt: Date?
            for _ in 0..<300 where refusedAt == nil {
                if try await env.request("/x", token: cached).status == 503 {
                    refusedAt = Date()
                } else {
                    try await Task.sleep(for: .milliseconds(20))
                }
            }
            let refused = try #require(refusedAt, "the keys were still used long after max_stale")
            #expect(refused >= staleAt.addingTimeInterval(-0.05), "refused \(staleAt.timeIntervalSince(refused)) s before max_stale")
            let forwardedBeforeStale = env.upstream.requestCount
            let late = TestSigner.rsa.token(claims: Claims.valid(extra: ["jti": .string("after")]))
            for token in [cached, late] {
                let response = try await env.request("/x", token: token)
                #expect(response.status == 503)
                #expect(response.json?["reason"] == .string("keys_unavailable"))
                #expect(response.json?["error"] == .string("temporarily_unavailable"))
                #expect(response.headers.first(name: "retry-after") == "5")
            }
            #expect(forwardedBeforeStale >= forwarded)
            #expect(env.upstream.requestCount == forwardedBeforeStale)
            let lines = env.failureLog
            #expect(lines.count == 3, "the first refusal while polling, then the two")
            #expect(lines.allSatisfy { $0["reason"] == .string("keys_unavailable") && $0["status"] == .number("503") })
            #expect(lines.allSatisfy { $0["provider"] == .string("test") })
            #expect(try await env.admin("/readyz").status == 503)
        }
    }

    /// K13: a JWKS or discovery endpoint answering with a redirect is never followed: the `Location` (which
    /// serves a good key set and discovery document) is never fetched, the provider gets no keys, and valid
    /// tokens get 503 `keys_unavailable`.
    @Test func redirectsFromTheJWKSAndDiscoveryEndpointsAreNeverFollowed() async throws {
        let elsewhere = try await TestJWKSServer(jwks: TestSigner.jwks([.rsa]))
        do {
            try await redirectsAreNeverFollowed(to: elsewhere)
        } catch {
            await elsewhere.close()
            throw error
        }
        await elsewhere.close()
    }

    private func redirectsAreNeverFollowed(to elsewhere: TestJWKSServer) async throws {
        try await TestEnvironment.run(signers: [.rsa], waitForKeys: false, configure: { configuration, jwks in
            let oidcIssuer = "http://127.0.0.1:\(jwks.port)"
            // Followed, either redirect would give the provider its keys.
            elsewhere.update { $0.discovery = "{\"issuer\":\"\(oidcIssuer)\",\"jwks_uri\":\"\(elsewhere.jwksURL.absoluteString)\"}" }
            jwks.update {
                $0.redirect = elsewhere.jwksURL.absoluteString
                $0.discoveryRedirect = elsewhere.discoveryURL.absoluteString
            }
            var oidc = ProviderSettings(name: "corp", type: .oidc)
            oidc.issuer = oidcIssuer
            oidc.audiences = [Claims.audience]
            configuration.providers.append(oidc)
            configuration.jwks.minRefresh = .milliseconds(200)
        }) { (env: TestEnvironment) async throws in
            // Wait for the start-up fetch and at least one retry of each.
            for _ in 0..<300 where env.jwks.fetchCount < 2 || env.jwks.discoveryCount < 2 {
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(env.jwks.fetchCount >= 2)
            #expect(env.jwks.discoveryCount >= 2)
            #expect(elsewhere.requestCount == 0, "a redirect was followed")
            let status = env.gatehouse.keyStore.status()
            #expect(status.map(\.usable) == [false, false])
            #expect(status.allSatisfy { $0.lastError?.contains("302") == true }, "\(status.map(\.lastError))")
            let jwksToken = TestSigner.rsa.token(claims: Claims.valid())
            let oidcToken = TestSigner.rsa.token(claims: Claims.valid(extra: ["iss": .string("http://127.0.0.1:\(env.jwks.port)")]))
            for token in [jwksToken, oidcToken] {
                let response = try await env.request("/x", token: token)
                #expect(response.status == 503)
                #expect(response.json?["reason"] == .string("keys_unavailable"))
            }
            #expect(env.failureLog.map { $0["provider"] } == [.string("test"), .string("corp")])
            try await env.expectNothingReachedUpstream()
            #expect(try await env.admin("/readyz").status == 503)
            #expect(elsewhere.requestCount == 0, "a redirect was followed")
        }
    }
}
