import Foundation
@testable import Gatehouse
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing
import GatehouseSyntax
import GatehouseConfig
import GatehouseAuth

/// The per-connection fast path (`RecentToken`): a keep-alive connection presenting the token of its
/// last verified request again reuses that identity and the identity fields written for it. Every
/// test sends all its requests over one HTTP/1.1 connection (`KeepAliveConnection`, which never
/// reconnects and fails when Gatehouse ends the connection), and checks that the shortcut still
/// honours expiry, key removal, sign-out, each route's requirements, header stripping, a change of
/// token, and a configuration reload.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct RecentTokenTests {
    /// No shared verified-token cache: a cache hit can then only be the connection's fast path.
    static func withoutSharedCache(_ configuration: inout Configuration, _ jwks: TestJWKSServer) {
        configuration.verification.cacheSize = 0
    }

    @Test(arguments: [false, true])
    func aRepeatedTokenTakesTheFastPathAndForwardsTheSameIdentity(upstreamHTTP2: Bool) async throws {
        try await TestEnvironment.run(upstreamHTTP2: upstreamHTTP2, configure: Self.withoutSharedCache) { (env: TestEnvironment) async throws in
            let token = TestSigner.rsa.token(claims: Claims.valid(extra: ["name": .string("Ada Lovelace")]))
            try await KeepAliveConnection.with(port: env.port) { (connection: KeepAliveConnection) async throws in
                let before = try await VerifyCacheCounts.read(env)
                for index in 0..<4 {
                    let response = try await connection.send("/v1/orders/\(index)", token: token)
                    #expect(response.status == 200)
                }
                let after = try await VerifyCacheCounts.read(env)
                // The first request is verified; the three that repeat its token take the fast path.
                #expect(after.misses - before.misses == 1)
                #expect(after.hits - before.hits == 3)
                let received = env.upstream.requests
                try #require(received.count == 4)
                let expected: [(String, String)] = [
                    ("x-auth-subject", "user-1"), ("x-auth-email", "ada@example.com"), ("x-auth-email-verified", "true"),
                    ("x-auth-name", "Ada Lovelace"), ("x-auth-provider", "test"),
                ]
                for request in received {
                    #expect(identityFields(request).filter { $0.0 != "x-auth-claims" }.map(Pair.init) == expected.map(Pair.init))
                    #expect(claimsSubject(request) == "user-1")
                    #expect(request.value("authorization") == "Bearer \(token)")
                }
                #expect(received.map(\.uri) == ["/v1/orders/0", "/v1/orders/1", "/v1/orders/2", "/v1/orders/3"])
            }
        }
    }

    /// One keep-alive connection switching between users' tokens (a gateway's shared connection): each request goes on
    /// with its own token's identity fields, byte for byte, whether they were written afresh or again from the
    /// connection's memory; the head buffer used again and the remembered fields copied never carry another's. To an
    /// `http2` upstream too, where the remembered fields are a header list's entries.
    @Test(arguments: [false, true])
    func aConnectionSwitchingTokensForwardsEachTokensOwnIdentity(upstreamHTTP2: Bool) async throws {
        try await TestEnvironment.run(upstreamHTTP2: upstreamHTTP2, configure: Self.withoutSharedCache) { (env: TestEnvironment) async throws in
            let users = ["user-1", "user-2", "a-much-longer-subject-for-user-3-that-grows-the-fields"]
            let tokens = users.map { TestSigner.rsa.token(claims: Claims.valid(subject: $0, extra: ["name": .string("name of \($0)")])) }
            let order = [0, 0, 1, 1, 2, 0, 2, 2, 1, 0]
            try await KeepAliveConnection.with(port: env.port) { (connection: KeepAliveConnection) async throws in
                for (index, user) in order.enumerated() {
                    let response = try await connection.send("/v1/switch/\(index)", token: tokens[user])
                    #expect(response.status == 200)
                }
            }
            let received = env.upstream.requests
            try #require(received.count == order.count)
            for (index, user) in order.enumerated() {
                let request = try #require(received.first { $0.uri == "/v1/switch/\(index)" })
                let fields = identityFields(request).filter { $0.0 != "x-auth-claims" }
                #expect(fields.first { $0.0 == "x-auth-subject" }?.1 == users[user], "request \(index)")
                #expect(fields.first { $0.0 == "x-auth-name" }?.1 == "name of \(users[user])", "request \(index)")
                #expect(fields.filter { $0.0 == "x-auth-subject" }.count == 1, "request \(index)")
                #expect(claimsSubject(request) == users[user], "request \(index)")
                #expect(request.value("authorization") == "Bearer \(tokens[user])", "request \(index)")
            }
        }
    }

    @Test func anExpiredTokenIsRefusedOnTheSameConnection() async throws {
        let clock = MovableClock()
        try await TestEnvironment.run(wallClock: clock.wallClock, configure: { configuration, jwks in
            Self.withoutSharedCache(&configuration, jwks)
            configuration.verification.leeway = .zero
        }) { (env: TestEnvironment) async throws in
            let claims = Claims.valid(lifetime: 4)
            let expiry = try #require(claims["exp"]?.integerValue)
            let token = TestSigner.ec.token(claims: claims)
            try await KeepAliveConnection.with(port: env.port) { (connection: KeepAliveConnection) async throws in
                #expect(try await connection.send("/v1/orders", token: token).status == 200)
                let before = try await VerifyCacheCounts.read(env)
                #expect(try await connection.send("/v1/orders", token: token).status == 200)
                #expect(try await VerifyCacheCounts.read(env).hits == before.hits + 1, "the repeat took the fast path")
                // Past `exp` (no leeway): the identity remembered on the connection must not be used any more.
                clock.advance(by: Double(expiry) - Date().timeIntervalSince1970 + 1)
                let expired = try await connection.send("/v1/orders", token: token)
                #expect(expired.status == 401)
                #expect(expired.json?["reason"] == .string("expired"))
                #expect(env.upstream.requestCount == 2)
                // The connection stays usable for a token that is still valid.
                let fresh = TestSigner.ec.token(claims: Claims.valid(subject: "user-2"))
                #expect(try await connection.send("/v1/orders", token: fresh).status == 200)
                #expect(env.upstream.last?.value("x-auth-subject") == "user-2")
            }
        }
    }

    /// The fast path's own expiry check has no leeway; the full check that follows applies it, so a
    /// token within the leeway goes on passing on the same connection.
    @Test func aTokenWithinTheLeewayKeepsPassingOnTheSameConnection() async throws {
        try await TestEnvironment.run(configure: Self.withoutSharedCache) { (env: TestEnvironment) async throws in
            let token = TestSigner.ec.token(claims: Claims.valid(lifetime: -5))  // leeway is 60 s
            try await KeepAliveConnection.with(port: env.port) { (connection: KeepAliveConnection) async throws in
                for _ in 0..<3 {
                    #expect(try await connection.send("/v1/orders", token: token).status == 200)
                }
                #expect(env.upstream.requests.map { $0.value("x-auth-subject") } == ["user-1", "user-1", "user-1"])
            }
        }
    }

    enum KeyRemoval: String, CaseIterable, Sendable {
        /// Another client's unknown `kid` makes Gatehouse refetch the key set.
        case unknownKidRefetch
        /// The scheduled refresh picks up the new key set.
        case scheduledRefresh
    }

    @Test(arguments: KeyRemoval.allCases)
    func aTokenWhoseKeyWasRemovedIsRefusedOnTheSameConnection(removal: KeyRemoval) async throws {
        try await TestEnvironment.run(signers: [.rsa, .ec], configure: { configuration, _ in
            configuration.jwks.unknownKidCooldown = .zero
            if removal == .scheduledRefresh {
                configuration.jwks.minRefresh = .milliseconds(200)
                configuration.jwks.maxRefresh = .milliseconds(200)
            }
        }) { (env: TestEnvironment) async throws in
            let token = TestSigner.rsa.token(claims: Claims.valid())
            try await KeepAliveConnection.with(port: env.port) { (connection: KeepAliveConnection) async throws in
                #expect(try await connection.send("/v1/orders", token: token).status == 200)
                #expect(try await connection.send("/v1/orders", token: token).status == 200)
                // The provider stops publishing the key that signed it.
                env.jwks.update { $0.body = TestSigner.jwks([.ec]) }
                let fetches = env.jwks.fetchCount
                switch removal {
                case .unknownKidRefetch:
                    // On another connection, so that this one's last verified token is still `token`.
                    let trigger = try await env.request("/v1/orders", token: TestSigner.ec.with(keyID: "trigger").token(claims: Claims.valid()))
                    #expect(trigger.json?["reason"] == .string("unknown_key"))
                    #expect(env.jwks.fetchCount > fetches)
                case .scheduledRefresh:
                    for _ in 0..<300 where env.jwks.fetchCount < fetches + 2 { try await Task.sleep(for: .milliseconds(10)) }
                    #expect(env.jwks.fetchCount >= fetches + 2)
                }
                let refused = try await connection.send("/v1/orders", token: token)
                #expect(refused.status == 401)
                #expect(refused.json?["reason"] == .string("unknown_key"))
                #expect(env.upstream.requestCount == 2)
                // A token signed by a key still published passes on the same connection.
                #expect(try await connection.send("/v1/orders", token: TestSigner.ec.token(claims: Claims.valid())).status == 200)
            }
        }
    }

    /// docs/security.md K14: the provider replaces the key under the same `kid`. Neither the
    /// connection's last identity nor the shared cache vouches for the token any more once the
    /// new key set is fetched: it is verified again, and fails.
    @Test(arguments: [false, true])
    func aKeyReplacedUnderTheSameKidIsNotVouchedForByAnEarlierCheck(sharedCache: Bool) async throws {
        let replacement = TestSigner.otherRSA.with(keyID: TestSigner.rsa.keyID)
        try await TestEnvironment.run(signers: [.rsa], configure: { configuration, _ in
            configuration.jwks.minRefresh = .milliseconds(200)
            configuration.jwks.maxRefresh = .milliseconds(200)
            if !sharedCache { configuration.verification.cacheSize = 0 }
        }) { (env: TestEnvironment) async throws in
            let token = TestSigner.rsa.token(claims: Claims.valid())
            try await KeepAliveConnection.with(port: env.port) { (connection: KeepAliveConnection) async throws in
                #expect(try await connection.send("/v1/orders", token: token).status == 200)
                #expect(try await connection.send("/v1/orders", token: token).status == 200)
                env.jwks.update { $0.body = TestSigner.jwks([replacement]) }
                let fetches = env.jwks.fetchCount
                for _ in 0..<300 where env.jwks.fetchCount < fetches + 2 { try await Task.sleep(for: .milliseconds(10)) }
                #expect(env.jwks.fetchCount >= fetches + 2)
                let refused = try await connection.send("/v1/orders", token: token)
                #expect(refused.status == 401)
                #expect(refused.json?["reason"] == .string("bad_signature"))
                let elsewhere = try await env.request("/v1/orders", token: token)
                #expect(elsewhere.status == 401)
                #expect(elsewhere.json?["reason"] == .string("bad_signature"))
                #expect(env.upstream.requestCount == 2)
                // The new key's tokens pass on the same connection.
                #expect(try await connection.send("/v1/orders", token: replacement.token(claims: Claims.valid())).status == 200)
            }
        }
    }

    enum SignOut: String, CaseIterable, Sendable {
        /// `/.gatehouse/signout` over the very connection that keeps presenting the token.
        case onThisConnection
        /// `/.gatehouse/signout` from another connection.
        case elsewhere
        /// `/.gatehouse/signout-everywhere` from another connection (the subject's cut-off).
        case everywhereElsewhere
    }

    @Test(arguments: SignOut.allCases)
    func aSignedOutTokenIsRefusedOnTheSameConnection(signOut: SignOut) async throws {
        try await TestEnvironment.run(configure: Self.withoutSharedCache) { (env: TestEnvironment) async throws in
            let token = TestSigner.ec.token(claims: Claims.valid(extra: ["jti": .string("recent-\(signOut.rawValue)")]))
            try await KeepAliveConnection.with(port: env.port) { (connection: KeepAliveConnection) async throws in
                #expect(try await connection.send("/v1/orders", token: token).status == 200)
                let before = try await VerifyCacheCounts.read(env)
                #expect(try await connection.send("/v1/orders", token: token).status == 200)
                #expect(try await VerifyCacheCounts.read(env).hits == before.hits + 1, "the repeat took the fast path")
                switch signOut {
                case .onThisConnection:
                    #expect(try await connection.send("/.gatehouse/signout", method: .POST, token: token).status == 200)
                case .elsewhere:
                    #expect(try await env.request("/.gatehouse/signout", method: .POST, token: token).status == 200)
                case .everywhereElsewhere:
                    #expect(try await env.request("/.gatehouse/signout-everywhere", method: .POST, token: token).status == 200)
                }
                for _ in 0..<2 {
                    let refused = try await connection.send("/v1/orders", token: token)
                    #expect(refused.status == 401)
                    #expect(refused.json?["reason"] == .string("revoked"))
                }
                #expect(env.upstream.requestCount == 2)
                // Another user's token still passes on this connection, and the signed-out one stays refused after it.
                let other = TestSigner.ec.token(claims: Claims.valid(subject: "user-2"))
                #expect(try await connection.send("/v1/orders", token: other).status == 200)
                #expect(env.upstream.last?.value("x-auth-subject") == "user-2")
                #expect(try await connection.send("/v1/orders", token: token).json?["reason"] == .string("revoked"))
                #expect(env.upstream.requestCount == 3)
            }
        }
    }

    @Test func eachRouteChecksItsOwnRequirementsOnTheSameConnection() async throws {
        try await TestEnvironment.run(configure: { configuration, jwks in
            Self.withoutSharedCache(&configuration, jwks)
            var scoped = RouteSettings(match: .prefix("/v1/sync"))
            scoped.scopes = ["sync:write"]
            var grouped = RouteSettings(match: .prefix("/admin"))
            grouped.groups = ["admins"]
            var corporate = RouteSettings(match: .prefix("/corp"))
            corporate.emailDomains = ["corp.example"]
            var partnerOnly = RouteSettings(match: .prefix("/partner"))
            partnerOnly.providers = ["partner"]
            var open = RouteSettings(match: .prefix("/public"))
            open.auth = .public
            var optional = RouteSettings(match: .prefix("/maybe"))
            optional.auth = .optional
            var partner = ProviderSettings(name: "partner", type: .jwks)
            partner.issuer = "https://partner.test"
            partner.jwksURI = configuration.providers[0].jwksURI
            partner.audiences = [Claims.audience]
            configuration.providers.append(partner)
            configuration.routes = [scoped, grouped, corporate, partnerOnly, open, optional]
        }) { (env: TestEnvironment) async throws in
            let reader = TestSigner.ec.token(claims: Claims.valid(extra: ["scope": .string("sync:read")]))
            try await KeepAliveConnection.with(port: env.port) { (connection: KeepAliveConnection) async throws in
                #expect(try await connection.send("/v1/orders", token: reader).status == 200)
                let before = try await VerifyCacheCounts.read(env)
                let scoped = try await connection.send("/v1/sync", token: reader)
                #expect(scoped.status == 403)
                #expect(scoped.json?["reason"] == .string("insufficient_scope"))
                #expect(scoped.headers.first(name: "www-authenticate")?.contains("scope=\"sync:write\"") == true)
                let grouped = try await connection.send("/admin", token: reader)
                #expect(grouped.status == 403)
                #expect(grouped.json?["reason"] == .string("forbidden"))
                let corporate = try await connection.send("/corp", token: reader)
                #expect(corporate.status == 403)
                #expect(corporate.json?["reason"] == .string("forbidden"))
                let partnerOnly = try await connection.send("/partner", token: reader)
                #expect(partnerOnly.status == 401)
                #expect(partnerOnly.json?["reason"] == .string("unknown_issuer"))
                // The refusals were decided on the fast path, not by verifying the token again.
                #expect(try await VerifyCacheCounts.read(env).hits == before.hits + 4)
                #expect(env.upstream.requestCount == 1)

                // A public route gets no identity even though the connection has one; an optional one gets it.
                #expect(try await connection.send("/public", token: reader).status == 200)
                #expect(identityFields(try #require(env.upstream.last)).isEmpty)
                #expect(try await connection.send("/maybe", token: reader).status == 200)
                #expect(env.upstream.last?.value("x-auth-subject") == "user-1")
                #expect(env.upstream.last?.value("x-auth-guest") == nil)
                #expect(try await connection.send("/v1/sync", token: reader).status == 403)
                #expect(try await connection.send("/v1/orders", token: reader).status == 200)
                #expect(env.upstream.last?.value("x-auth-subject") == "user-1")

                // A token that has what the scoped route needs passes it on the same connection; the reader still does not.
                let writer = TestSigner.ec.token(claims: Claims.valid(subject: "writer", extra: ["scope": .string("sync:read sync:write")]))
                #expect(try await connection.send("/v1/sync", token: writer).status == 200)
                #expect(try await connection.send("/v1/sync", token: writer).status == 200)
                #expect(env.upstream.last?.value("x-auth-subject") == "writer")
                #expect(try await connection.send("/v1/sync", token: reader).status == 403)
                #expect(env.upstream.requestCount == 6)
            }
        }
    }

    @Test func clientSentIdentityHeadersAreStrippedOnEveryRequest() async throws {
        try await TestEnvironment.run(configure: Self.withoutSharedCache) { (env: TestEnvironment) async throws in
            let token = TestSigner.rsa.token(claims: Claims.valid())  // no `name` claim
            let spoofed: [(String, String)] = [
                ("X-Auth-Subject", "admin"), ("x_auth_subject", "admin"), ("X-AUTH-EMAIL", "root@evil.test"),
                ("X-Auth-Name", "Mallory"), ("X-Auth-Provider", "evil"), ("X-Auth-Claims", "e30"), ("X-Auth-Guest", "true"),
            ]
            try await KeepAliveConnection.with(port: env.port) { (connection: KeepAliveConnection) async throws in
                #expect(try await connection.send("/v1/orders", token: token).status == 200)
                for _ in 0..<3 {
                    #expect(try await connection.send("/v1/orders", token: token, headers: spoofed).status == 200)
                }
                let expected = [
                    Pair("x-auth-subject", "user-1"), Pair("x-auth-email", "ada@example.com"), Pair("x-auth-email-verified", "true"),
                    Pair("x-auth-provider", "test"),
                ]
                let received = env.upstream.requests
                try #require(received.count == 4)
                for request in received {
                    #expect(identityFields(request).filter { $0.0 != "x-auth-claims" }.map(Pair.init) == expected)
                    #expect(request.values("x-auth-claims").count == 1)
                    #expect(claimsSubject(request) == "user-1")
                }
            }
        }
    }

    @Test(arguments: [0, 10000])
    func switchingTokensSwitchesTheIdentity(cacheSize: Int) async throws {
        try await TestEnvironment.run(configure: { configuration, _ in
            configuration.verification.cacheSize = cacheSize
            var optional = RouteSettings(match: .prefix("/maybe"))
            optional.auth = .optional
            configuration.routes = [optional]
        }) { (env: TestEnvironment) async throws in
            let a = TestSigner.rsa.token(claims: Claims.valid(subject: "user-a", extra: [
                "email": .string("a@example.com"), "name": .string("Ada"),
            ]))
            let b = TestSigner.ec.token(claims: Claims.valid(subject: "user-b", extra: [
                "email": .string("b@example.com"), "email_verified": .bool(false),
            ]))
            let tampered = Self.alteringSignature(of: a)
            #expect(tampered != a && tampered.utf8.count == a.utf8.count)
            try await KeepAliveConnection.with(port: env.port) { (connection: KeepAliveConnection) async throws in
                // (path, token, spoofed headers, expected status, expected subject upstream or "guest")
                let steps: [(String, String?, [(String, String)], Int, String?)] = [
                    ("/v1/a1", a, [], 200, "user-a"),
                    ("/v1/b1", b, [], 200, "user-b"),
                    ("/v1/a2", a, [], 200, "user-a"),
                    ("/v1/a3", a, [], 200, "user-a"),
                    ("/v1/b2", b, [("X-Auth-Subject", "user-a")], 200, "user-b"),
                    ("/v1/b3", b, [], 200, "user-b"),
                    ("/maybe/1", nil, [("X-Auth-Subject", "user-b")], 200, "guest"),
                    ("/v1/b4", b, [], 200, "user-b"),
                    ("/v1/tampered", tampered, [], 401, nil),
                    ("/v1/a4", a, [], 200, "user-a"),
                    ("/v1/tampered", tampered, [], 401, nil),
                    ("/v1/a5", a, [], 200, "user-a"),
                    ("/maybe/2", nil, [], 200, "guest"),
                    ("/maybe/3", a, [], 200, "user-a"),
                ]
                var forwarded: [String] = []
                for (path, token, headers, status, subject) in steps {
                    let response = try await connection.send(path, token: token, headers: headers)
                    #expect(response.status == status, "\(path)")
                    if subject != nil { forwarded.append(path) }
                }
                let received = env.upstream.requests
                #expect(received.map(\.uri) == forwarded)
                let expectedSubjects = steps.compactMap(\.4)
                try #require(received.count == expectedSubjects.count)
                for (request, subject) in zip(received, expectedSubjects) {
                    let fields = identityFields(request).filter { $0.0 != "x-auth-claims" }.map(Pair.init)
                    switch subject {
                    case "user-a":
                        #expect(fields == [
                            Pair("x-auth-subject", "user-a"), Pair("x-auth-email", "a@example.com"), Pair("x-auth-email-verified", "true"),
                            Pair("x-auth-name", "Ada"), Pair("x-auth-provider", "test"),
                        ], "\(request.uri)")
                        #expect(claimsSubject(request) == "user-a", "\(request.uri)")
                        #expect(request.value("authorization") == "Bearer \(a)")
                    case "user-b":
                        #expect(fields == [
                            Pair("x-auth-subject", "user-b"), Pair("x-auth-email", "b@example.com"), Pair("x-auth-email-verified", "false"),
                            Pair("x-auth-provider", "test"),
                        ], "\(request.uri)")
                        #expect(claimsSubject(request) == "user-b", "\(request.uri)")
                        #expect(request.value("authorization") == "Bearer \(b)")
                    default:
                        #expect(fields == [Pair("x-auth-guest", "true")], "\(request.uri)")
                        #expect(request.value("authorization") == nil)
                    }
                }
                #expect(env.failureLog.count == 2)
            }
        }
    }

    @Test func aReloadedHeaderMappingAppliesOnTheSameConnection() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            let token = TestSigner.ec.token(claims: Claims.valid())
            try await KeepAliveConnection.with(port: env.port) { (connection: KeepAliveConnection) async throws in
                // X-User-Id is no identity header yet: the client's value goes through.
                #expect(try await connection.send("/v1/orders", token: token, headers: [("X-User-Id", "spoofed")]).status == 200)
                #expect(try await connection.send("/v1/orders", token: token, headers: [("X-User-Id", "spoofed")]).status == 200)
                var received = try #require(env.upstream.last)
                #expect(received.values("x-user-id") == ["spoofed"])
                #expect(received.value("x-auth-subject") == "user-1")
                #expect(received.value("x-auth-claims") != nil)

                var next = env.gatehouse.configuration
                next.headers.mappings = [HeaderMapping(name: "X-User-Id", claimPath: "sub"), HeaderMapping(name: "X-User-Mail", claimPath: "email")]
                next.headers.forwardClaimsJSON = false
                #expect(await env.gatehouse.reload(next).isEmpty)
                for _ in 0..<2 {
                    #expect(try await connection.send("/v1/orders", token: token, headers: [("X-User-Id", "spoofed")]).status == 200)
                    received = try #require(env.upstream.last)
                    #expect(received.values("x-user-id") == ["user-1"])
                    #expect(received.values("x-user-mail") == ["ada@example.com"])
                    #expect(received.value("x-auth-subject") == nil)
                    #expect(received.value("x-auth-email") == nil)
                    #expect(received.value("x-auth-claims") == nil)
                    #expect(received.values("x-auth-provider") == ["test"])
                }

                // The next reload's route requirements apply to the same token on the same connection too.
                var stricter = env.gatehouse.configuration
                var scoped = RouteSettings(match: .prefix("/v1/orders"))
                scoped.scopes = ["orders:write"]
                stricter.routes = [scoped]
                #expect(await env.gatehouse.reload(stricter).isEmpty)
                let refused = try await connection.send("/v1/orders", token: token)
                #expect(refused.status == 403)
                #expect(refused.json?["reason"] == .string("insufficient_scope"))
                #expect(env.upstream.requestCount == 4)
            }
        }
    }

    @Test func aHangUpReloadAppliesOnTheSameConnection() async throws {
        let path = NSTemporaryDirectory() + "gatehouse-recent-" + UUID().uuidString + ".toml"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try await TestEnvironment.run(configurationPath: path) { (env: TestEnvironment) async throws in
            let token = TestSigner.rsa.token(claims: Claims.valid())
            try await KeepAliveConnection.with(port: env.port) { (connection: KeepAliveConnection) async throws in
                #expect(try await connection.send("/v1/orders", token: token).status == 200)
                #expect(try await connection.send("/v1/orders", token: token).status == 200)
                #expect(env.upstream.last?.value("x-auth-subject") == "user-1")
                let file = env.minimalTOML + """
                    [headers]
                    X-Principal = "sub"
                    forward_claims_json = false
                    """
                try file.write(toFile: path, atomically: true, encoding: .utf8)
                #expect(await env.gatehouse.hangUp().isEmpty)
                for _ in 0..<2 {
                    #expect(try await connection.send("/v1/orders", token: token, headers: [("X-Principal", "admin")]).status == 200)
                    let received = try #require(env.upstream.last)
                    #expect(received.values("x-principal") == ["user-1"])
                    #expect(received.value("x-auth-subject") == nil)
                    #expect(received.value("x-auth-claims") == nil)
                }
            }
        }
    }

    /// `token` with one character in the middle of its signature changed (same length).
    static func alteringSignature(of token: String) -> String {
        var characters = Array(token)
        let signatureStart = (characters.lastIndex(of: ".") ?? 0) + 1
        let index = signatureStart + (characters.count - signatureStart) / 2
        characters[index] = characters[index] == "A" ? "B" : "A"
        return String(characters)
    }
}

/// A header as compared in expectations (tuples are not Equatable).
private struct Pair: Equatable, CustomStringConvertible {
    var name: String
    var value: String
    init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
    init(_ pair: (String, String)) { self.init(pair.0, pair.1) }
    var description: String { "\(name): \(value)" }
}

/// Every header the upstream received whose name, lower-cased with `_` read as `-`, starts with
/// `x-auth-` (as an upstream stack folding names would see it), in order, names lower-cased.
private func identityFields(_ request: TestUpstream.Received) -> [(String, String)] {
    request.headers.compactMap { name, value in
        let folded = name.lowercased().replacingOccurrences(of: "_", with: "-")
        return folded.hasPrefix("x-auth-") ? (name.lowercased(), value) : nil
    }
}

/// The `sub` of the forwarded `X-Auth-Claims`.
private func claimsSubject(_ request: TestUpstream.Received) -> String? {
    guard let claims = request.value("x-auth-claims"), let decoded = Base64URL.decode(Array(claims.utf8)) else { return nil }
    return (try? StrictJSON.parse(decoded))?.objectValue?["sub"]?.stringValue
}

/// `gatehouse_verify_cache_total` from the admin port's `/metrics` (RecentTokenTests, ExtAuthzTests).
struct VerifyCacheCounts {
    var hits: Int
    var misses: Int

    static func read(_ env: TestEnvironment) async throws -> VerifyCacheCounts {
        let text = try await env.admin("/metrics").body
        func value(_ result: String) -> Int {
            let prefix = "gatehouse_verify_cache_total{result=\"\(result)\"} "
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) else { return 0 }
            return Int(Double(line.dropFirst(prefix.count).trimmingCharacters(in: .whitespaces)) ?? -1)
        }
        return VerifyCacheCounts(hits: value("hit"), misses: value("miss"))
    }
}

/// One HTTP/1.1 keep-alive connection to Gatehouse, taking turns: a request, its whole response,
/// the next request. It never reconnects: a response that ends the connection is recorded as an
/// issue, and a request after Gatehouse closed the connection throws.
private final class KeepAliveConnection {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private var responses: NIOAsyncChannelInboundStream<HTTPClientResponsePart>.AsyncIterator
    private let requests: NIOAsyncChannelOutboundWriter<HTTPClientRequestPart>
    private let channel: any Channel
    private let localPort: Int?
    private(set) var exchanged = 0

    private init(
        responses: NIOAsyncChannelInboundStream<HTTPClientResponsePart>.AsyncIterator,
        requests: NIOAsyncChannelOutboundWriter<HTTPClientRequestPart>, channel: any Channel
    ) {
        self.responses = responses
        self.requests = requests
        self.channel = channel
        self.localPort = channel.localAddress?.port
    }

    /// Opens the connection, runs `body` with it, then checks it is still the same open connection.
    static func with(port: Int, _ body: (KeepAliveConnection) async throws -> Void) async throws {
        let asyncChannel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    return try NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>(wrappingChannelSynchronously: channel)
                }
            }
        try await asyncChannel.executeThenClose { inbound, outbound in
            let connection = KeepAliveConnection(responses: inbound.makeAsyncIterator(), requests: outbound, channel: asyncChannel.channel)
            try await body(connection)
            #expect(connection.channel.isActive, "Gatehouse closed the keep-alive connection")
            #expect(connection.channel.localAddress?.port == connection.localPort)
            #expect(connection.exchanged > 1)
        }
    }

    func send(
        _ path: String, method: HTTPMethod = .GET, token: String? = nil, headers extra: [(String, String)] = []
    ) async throws -> TestEnvironment.Response {
        guard channel.isActive else { throw Failure(description: "connection closed before request \(exchanged + 1) (\(path))") }
        var headers = HTTPHeaders([("Host", "127.0.0.1")])
        if let token { headers.add(name: "Authorization", value: "Bearer \(token)") }
        headers.add(contentsOf: extra)
        if method == .POST { headers.add(name: "Content-Length", value: "0") }
        try await requests.write(contentsOf: [
            .head(HTTPRequestHead(version: .http1_1, method: method, uri: path, headers: headers)), .end(nil),
        ])
        let channel = self.channel
        let timeout = channel.eventLoop.scheduleTask(in: .seconds(10)) { channel.close(promise: nil) }
        defer { timeout.cancel() }
        var head: HTTPResponseHead?
        var body = ByteBuffer()
        while let part = try await responses.next() {
            switch part {
            case .head(let received):
                head = received
            case .body(var bytes):
                body.writeBuffer(&bytes)
            case .end:
                guard let head else { throw Failure(description: "response without a head") }
                exchanged += 1
                if !head.isKeepAlive {
                    Issue.record("Gatehouse ended the connection after request \(exchanged) (\(path)): \(head.status.code)")
                }
                return TestEnvironment.Response(status: Int(head.status.code), headers: head.headers, body: String(buffer: body))
            }
        }
        throw Failure(description: "Gatehouse closed the connection (or it timed out) awaiting the response to request \(exchanged + 1) (\(path))")
    }
}

/// The HTTP/2 door (issue 19): the same fast path, the same checks.
extension RecentTokenTests {

    /// The streams of one HTTP/2 connection share its last verified token: with the shared cache off, a
    /// repeated token is a cache hit only through that path. Another token on the same connection gets its
    /// own identity (no mixing between streams), and the first comes back with its own again.
    @Test func overHTTP2TheStreamsOfAConnectionShareTheFastPathWithoutMixingIdentities() async throws {
        try await TestEnvironment.run(configure: Self.withoutSharedCache) { (env: TestEnvironment) async throws in
            let ada = TestSigner.ec.token(claims: Claims.valid())
            let bob = TestSigner.ec.token(claims: Claims.valid(subject: "user-2"))
            let hits = "gatehouse_verify_cache_total{result=\"hit\"}"
            let hitsBefore = try await env.metric(hits)
            let answers = try await HTTP2IntakeTests.send([
                .init(name: "a1", headers: HTTP2IntakeTests.block(env, path: "/v1/a1", token: ada)),
                .init(name: "a2", headers: HTTP2IntakeTests.block(env, path: "/v1/a2", token: ada)),
                .init(name: "a3", headers: HTTP2IntakeTests.block(env, path: "/v1/a3", token: ada)),
                .init(name: "b1", headers: HTTP2IntakeTests.block(env, path: "/v1/b1", token: bob)),
                .init(name: "a4", headers: HTTP2IntakeTests.block(env, path: "/v1/a4", token: ada)),
            ], to: env)
            for name in ["a1", "a2", "a3", "b1", "a4"] { #expect(answers[name]?.status == 200, "\(name): \(String(describing: answers[name]))") }
            #expect(try await env.metric(hits) == hitsBefore + 2, "a2 and a3 took the connection's fast path")
            for (path, subject) in [("/v1/a1", "user-1"), ("/v1/a2", "user-1"), ("/v1/a3", "user-1"), ("/v1/b1", "user-2"), ("/v1/a4", "user-1")] {
                #expect(env.upstream.requests.first { $0.uri == path }?.values("x-auth-subject") == [subject], "\(path)")
            }
        }
    }

    /// The fast path skips the hashing, never the checks: a sign-out on one stream refuses the token on the
    /// next, and a route's requirements are judged on each stream.
    @Test func overHTTP2ASignOutAndARoutesRequirementsHoldOnTheNextStream() async throws {
        try await TestEnvironment.run(configure: { configuration, jwks in
            Self.withoutSharedCache(&configuration, jwks)
            var scoped = RouteSettings(match: .prefix("/v1/sync"))
            scoped.scopes = ["sync:write"]
            configuration.routes = [scoped]
        }) { (env: TestEnvironment) async throws in
            let token = TestSigner.ec.token(claims: Claims.valid())
            let answers = try await HTTP2IntakeTests.send([
                .init(name: "before", headers: HTTP2IntakeTests.block(env, path: "/v1/orders", token: token)),
                .init(name: "scoped", headers: HTTP2IntakeTests.block(env, path: "/v1/sync", token: token)),
                .init(name: "signout", headers: HTTP2IntakeTests.block(env, method: "POST", path: "/.gatehouse/signout", token: token)),
                .init(name: "after", headers: HTTP2IntakeTests.block(env, path: "/v1/orders", token: token)),
            ], to: env)
            #expect(answers["before"]?.status == 200)
            #expect(answers["scoped"]?.status == 403 && answers["scoped"]?.json?["reason"] == .string("insufficient_scope"))
            #expect(answers["signout"]?.status == 200)
            #expect(answers["after"]?.status == 401 && answers["after"]?.json?["reason"] == .string("revoked"), "\(String(describing: answers["after"]))")
            #expect(env.upstream.requests.map(\.uri) == ["/v1/orders"])
        }
    }
}
