import AsyncHTTPClient
import Crypto
import Foundation
@testable import Gatehouse
import NIOCore
import NIOHTTP1
import Testing
import GatehouseSyntax
import GatehouseConfig
import GatehouseTokens
import GatehouseVocabulary

/// OpenID Connect Back-Channel Logout 1.0 (`[[provider]] backchannel_logout`, docs/reference.md §7.3): logout tokens made
/// by PyJWT (Resources/logout/mint_logout_tokens.py) with the provider's key, POSTed to
/// `/.gatehouse/backchannel-logout/<provider>`; every rule of §2.6 broken once, the sessions they name, and what a logout
/// revokes on every door and across replicas sharing PostgreSQL.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct BackchannelLogoutTests {
    static let path = "/.gatehouse/backchannel-logout/test"
    static let logoutEvent = "http://schemas.openid.net/event/backchannel-logout"
    static let partnerIssuer = "https://partner.test"

    // MARK: - Minting with PyJWT

    /// Which key signs a logout token.
    enum SigningKey: String {
        /// The provider's (`TestKeys.ec`, published as kid `ec-1`, ES256).
        case provider
        /// A P-256 key the provider does not publish.
        case stranger
        /// An HMAC secret (a JWS `alg` the provider does not allow).
        case hmacSecret
    }

    struct Spec {
        var claims: [String: JSONValue]
        /// Added to PyJWT's header (`{"alg","typ":"JWT"}` and `kid` `ec-1`); `.null` removes a member.
        var header: [String: JSONValue] = [:]
        var key = SigningKey.provider
    }

    static let strangerKey = P256.Signing.PrivateKey()

    /// One PyJWT run minting every token of `specs`: name -> compact JWS.
    static func mint(_ specs: [String: Spec]) async throws -> [String: String] {
        let directory = try Contract.makeDirectory("logout-tokens")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func file(_ key: SigningKey) -> String { directory + "/" + key.rawValue }
        try TestKeys.ec.pemRepresentation.write(toFile: file(.provider), atomically: true, encoding: .utf8)
        try strangerKey.pemRepresentation.write(toFile: file(.stranger), atomically: true, encoding: .utf8)
        try "a-shared-secret-for-hs256-long-enough-for-pyjwt-to-sign-with-it-0123456789"
            .write(toFile: file(.hmacSecret), atomically: true, encoding: .utf8)
        let spec = JSONValue.object(specs.mapValues { spec in
            var entry: [String: JSONValue] = ["claims": .object(spec.claims), "header": .object(spec.header)]
            if spec.key != .provider { entry["key_file"] = .string(file(spec.key)) }
            return .object(entry)
        })
        let specFile = directory + "/spec.json"
        try spec.compactJSON.write(toFile: specFile, atomically: true, encoding: .utf8)
        let printed = try await PythonPeer.runJSON(
            "logout", "mint_logout_tokens.py", ["--key", file(.provider), "--alg", "ES256", "--kid", "ec-1", "--spec", "@" + specFile])
        var tokens: [String: String] = [:]
        for name in specs.keys { tokens[name] = try #require(printed[name]?.stringValue, "PyJWT minted no \(name): \(printed)") }
        return tokens
    }

    static var now: Int64 { Int64(Date().timeIntervalSince1970) }

    /// A logout token's claims (§2.4) for the test provider; `lifetime` nil: no `exp` (drafts of the spec).
    static func logoutClaims(
        sid: String?, subject: String?, issuedAt: Int64, lifetime: Int64? = 120, issuer: String = Claims.issuer
    ) -> [String: JSONValue] {
        var claims: [String: JSONValue] = [
            "iss": .string(issuer), "aud": .string(Claims.audience), "iat": .number(String(issuedAt)),
            "jti": .string(UUID().uuidString), "events": .object([logoutEvent: .object([:])]),
        ]
        if let lifetime { claims["exp"] = .number(String(issuedAt + lifetime)) }
        if let sid { claims["sid"] = .string(sid) }
        if let subject { claims["sub"] = .string(subject) }
        return claims
    }

    /// An access token of the test provider (or another issuer's), with a `sid` when given, issued at `issuedAt`.
    static func accessToken(subject: String, sid: String?, issuedAt: Int64, issuer: String = Claims.issuer) -> String {
        var extra: [String: JSONValue] = ["iat": .number(String(issuedAt)), "iss": .string(issuer)]
        if let sid { extra["sid"] = .string(sid) }
        return TestSigner.ec.token(claims: Claims.valid(subject: subject, extra: extra))
    }

    // MARK: - Configuration and requests

    /// Provider `test` takes logouts; `partner` (another issuer, same keys) too; `plain` (a third issuer) does not.
    static func configure(
        _ settings: BackchannelLogoutSettings = BackchannelLogoutSettings()
    ) -> (inout Configuration, TestJWKSServer) -> Void {
        { configuration, jwks in
            configuration.providers[0].backchannelLogout = settings
            var partner = ProviderSettings(name: "partner", type: .jwks)
            partner.issuer = partnerIssuer
            partner.jwksURI = jwks.jwksURL
            partner.audiences = [Claims.audience]
            partner.backchannelLogout = BackchannelLogoutSettings()
            var plain = ProviderSettings(name: "plain", type: .jwks)
            plain.issuer = "https://plain.test"
            plain.jwksURI = jwks.jwksURL
            plain.audiences = [Claims.audience]
            configuration.providers += [partner, plain]
        }
    }

    static func withRevocationStore(
        _ store: String, _ settings: BackchannelLogoutSettings = BackchannelLogoutSettings()
    ) -> (inout Configuration, TestJWKSServer) -> Void {
        { configuration, jwks in
            configure(settings)(&configuration, jwks)
            var revocation = RevocationSettings()
            revocation.store = store
            configuration.revocation = revocation
        }
    }

    /// A provider's POST: `application/x-www-form-urlencoded` with `logout_token`.
    static func logOut(
        _ env: TestEnvironment, _ token: String, provider: String = "test", port: Int? = nil
    ) async throws -> TestEnvironment.Response {
        try await env.request(
            "/.gatehouse/backchannel-logout/\(provider)", method: .POST, headers: [("Content-Type", "application/x-www-form-urlencoded")],
            body: "logout_token=" + token, port: port)
    }

    static func status(_ env: TestEnvironment, _ token: String, port: Int? = nil) async throws -> Int {
        try await env.request("/x", token: token, port: port).status
    }

    static func expectApplied(_ response: TestEnvironment.Response, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(response.status == 200, "\(response.status) \(response.body)", sourceLocation: sourceLocation)
        #expect(response.json == ["logged_out": .bool(true)], "\(response.body)", sourceLocation: sourceLocation)
        #expect(response.headers.first(name: "cache-control") == "no-store", sourceLocation: sourceLocation)
    }

    /// 400 `invalid_token` naming `reason`, and exactly one more failure-log line for it (its reason, status 400, the
    /// logout path, the logout token's fingerprint, never the token).
    static func expectRefused(
        _ response: TestEnvironment.Response, _ reason: FailureReason, token: String, env: TestEnvironment, linesBefore: Int,
        _ what: String, sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        #expect(response.status == 400, "\(what): \(response.status) \(response.body)", sourceLocation: sourceLocation)
        #expect(response.json?["error"] == .string("invalid_token"), "\(what): \(response.body)", sourceLocation: sourceLocation)
        #expect(
            response.json?["error_description"] == .string("the logout token was refused: \(reason.rawValue)"), "\(what): \(response.body)",
            sourceLocation: sourceLocation)
        _ = await Contract.eventually(timeout: .seconds(2)) { env.failureLogLines.count > linesBefore }
        let lines = env.failureLogLines
        #expect(lines.count == linesBefore + 1, "\(what): one failure-log line, got \(lines.dropFirst(linesBefore))", sourceLocation: sourceLocation)
        guard lines.count > linesBefore, let object = env.failureLog.dropFirst(linesBefore).first else { return }
        #expect(object["provider"] == .string("test"), "\(what): \(lines[linesBefore])", sourceLocation: sourceLocation)
        FailureLineExpectation(
            reason: reason, status: 400, method: "POST", path: path, requestID: nil, token: token, presentedAsBearer: true
        ).check(object, line: lines[linesBefore], sourceLocation: sourceLocation)
    }

    /// `gatehouse_backchannel_logouts_total` of `provider` now: result -> count.
    static func logoutCounts(_ env: TestEnvironment, provider: String = "test") async throws -> [String: Double] {
        let prefix = "gatehouse_backchannel_logouts_total{"
        var counts: [String: Double] = [:]
        for line in try await env.admin("/metrics").body.split(separator: "\n") where line.hasPrefix(prefix) {
            guard let close = line.firstIndex(of: "}") else { continue }
            let labels = line[line.index(line.startIndex, offsetBy: prefix.count)..<close]
            guard labels.contains("provider=\"\(provider)\""),
                let result = labels.split(separator: ",").first(where: { $0.hasPrefix("result=") })?.dropFirst("result=\"".count).dropLast(),
                let value = Double(line[line.index(after: close)...].trimmingCharacters(in: .whitespaces))
            else { continue }
            counts[String(result)] = value
        }
        return counts
    }

    // MARK: - 1. Every rule of §2.6 broken once

    /// Each logout token breaks one rule: 400 `invalid_token` with its reason, one failure-log line, and the session it
    /// names keeps working (nothing revoked). An ID token posted as a logout token is one of them.
    @Test func everyBrokenRuleIsRefusedWithItsReasonAndRevokesNothing() async throws {
        let now = Self.now
        let cases: [(name: String, reason: FailureReason)] = [
            ("malformed", .malformedToken), ("alg_none", .unsupportedAlgorithm), ("hs256", .unsupportedAlgorithm),
            ("foreign_issuer", .unknownIssuer), ("no_iss", .unknownIssuer), ("no_aud", .wrongAudience), ("unpublished_kid", .unknownKey),
            ("forged_signature", .badSignature),
            ("typ_at_jwt", .wrongTokenType), ("id_token", .wrongTokenType), ("id_token_untyped", .invalidClaims),
            ("foreign_audience", .wrongAudience), ("foreign_audiences", .wrongAudience), ("no_iat", .invalidClaims),
            ("no_jti", .invalidClaims), ("empty_jti", .invalidClaims), ("no_events", .invalidClaims), ("events_array", .invalidClaims),
            ("other_event", .invalidClaims), ("event_not_object", .invalidClaims), ("neither_sid_nor_sub", .invalidClaims),
            ("nonce", .invalidClaims), ("iat_future", .notYetValid), ("nbf_future", .notYetValid), ("exp_past", .expired),
        ]
        func claims(_ name: String, _ change: (inout [String: JSONValue]) -> Void = { _ in }) -> [String: JSONValue] {
            var claims = Self.logoutClaims(sid: "sid-\(name)", subject: "user-\(name)", issuedAt: now - 5)
            change(&claims)
            return claims
        }
        var specs: [String: Spec] = [
            "alg_none": Spec(claims: claims("alg_none"), header: ["alg": .string("none"), "typ": .string("logout+jwt")]),
            "hs256": Spec(claims: claims("hs256"), header: ["alg": .string("HS256")], key: .hmacSecret),
            "foreign_issuer": Spec(claims: claims("foreign_issuer") { $0["iss"] = .string("https://evil.test") }),
            "no_iss": Spec(claims: claims("no_iss") { $0["iss"] = nil }),
            "no_aud": Spec(claims: claims("no_aud") { $0["aud"] = nil }),
            "unpublished_kid": Spec(claims: claims("unpublished_kid"), header: ["kid": .string("ec-unpublished")], key: .stranger),
            "forged_signature": Spec(claims: claims("forged_signature"), key: .stranger),
            "typ_at_jwt": Spec(claims: claims("typ_at_jwt"), header: ["typ": .string("at+jwt")]),
            // What a provider sends the client at sign-in (OpenID Connect Core §2): typ JWT, a nonce, no events.
            "id_token": Spec(claims: [
                "iss": .string(Claims.issuer), "aud": .string(Claims.audience), "sub": .string("user-id_token"), "sid": .string("sid-id_token"),
                "iat": .number(String(now - 5)), "exp": .number(String(now + 600)), "auth_time": .number(String(now - 5)),
                "nonce": .string("n-0S6_WzA2Mj"), "email": .string("ada@example.com"),
            ]),
            "id_token_untyped": Spec(claims: [
                "iss": .string(Claims.issuer), "aud": .string(Claims.audience), "sub": .string("user-id_token_untyped"),
                "sid": .string("sid-id_token_untyped"), "iat": .number(String(now - 5)), "exp": .number(String(now + 600)),
                "jti": .string(UUID().uuidString), "nonce": .string("n-0S6_WzA2Mj"),
            ], header: ["typ": .null]),
            "foreign_audience": Spec(claims: claims("foreign_audience") { $0["aud"] = .string("billing-api") }),
            "foreign_audiences": Spec(claims: claims("foreign_audiences") { $0["aud"] = .array([.string("billing-api"), .string("crm")]) }),
            "no_iat": Spec(claims: claims("no_iat") { $0["iat"] = nil }),
            "no_jti": Spec(claims: claims("no_jti") { $0["jti"] = nil }),
            "empty_jti": Spec(claims: claims("empty_jti") { $0["jti"] = .string("") }),
            "no_events": Spec(claims: claims("no_events") { $0["events"] = nil }),
            "events_array": Spec(claims: claims("events_array") { $0["events"] = .array([.string(Self.logoutEvent)]) }),
            "other_event": Spec(claims: claims("other_event") {
                $0["events"] = .object(["http://schemas.openid.net/event/other": .object([:])])
            }),
            "event_not_object": Spec(claims: claims("event_not_object") { $0["events"] = .object([Self.logoutEvent: .string("yes")]) }),
            "neither_sid_nor_sub": Spec(claims: claims("neither_sid_nor_sub") {
                $0["sid"] = nil
                $0["sub"] = nil
            }),
            "nonce": Spec(claims: claims("nonce") { $0["nonce"] = .string("n-0S6_WzA2Mj") }),
            "iat_future": Spec(claims: claims("iat_future") {
                $0["iat"] = .number(String(now + 600))
                $0["exp"] = .number(String(now + 900))
            }),
            "nbf_future": Spec(claims: claims("nbf_future") { $0["nbf"] = .number(String(now + 600)) }),
            "exp_past": Spec(claims: claims("exp_past") {
                $0["iat"] = .number(String(now - 900))
                $0["exp"] = .number(String(now - 600))
            }),
        ]
        for name in specs.keys where specs[name]?.header["typ"] == nil && !name.hasPrefix("id_token") {
            specs[name]?.header["typ"] = .string("logout+jwt")
        }
        var tokens = try await Self.mint(specs)
        tokens["malformed"] = "this-is-not-a-jws"
        #expect(Set(tokens.keys) == Set(cases.map(\.name)))

        try await TestEnvironment.run(configure: Self.configure()) { (env: TestEnvironment) async throws in
            // The session each token names: its user's access token, issued before the logout token.
            var sessions: [String: String] = [:]
            for (name, _) in cases {
                let session = Self.accessToken(subject: "user-\(name)", sid: "sid-\(name)", issuedAt: now - 10)
                sessions[name] = session
                #expect(try await Self.status(env, session) == 200, "\(name)'s session before")
            }
            var expectedCounts: [String: Double] = [:]
            for (name, reason) in cases {
                let token = try #require(tokens[name])
                let linesBefore = env.failureLogLines.count
                let response = try await Self.logOut(env, token)
                await Self.expectRefused(response, reason, token: token, env: env, linesBefore: linesBefore, name)
                expectedCounts[reason.rawValue, default: 0] += 1
                #expect(try await Self.status(env, try #require(sessions[name])) == 200, "\(name) revoked its session")
            }
            // Still nothing revoked once every refusal was taken, nothing counted as applied.
            for (name, _) in cases {
                #expect(try await Self.status(env, try #require(sessions[name])) == 200, "\(name)'s session after all refusals")
            }
            #expect(try await Self.logoutCounts(env) == expectedCounts)
            #expect(env.failureLog.allSatisfy { $0["path"] == .string(Self.path) }, "only the refusals were logged")
        }
    }

    // MARK: - 2. A valid logout naming a sid, and its replay

    @Test func aSessionLogoutRevokesThatSessionOnlyAndItsReplayIsRefused() async throws {
        let now = Self.now
        let specs = [
            "logout": Spec(claims: Self.logoutClaims(sid: "s-1", subject: "user-1", issuedAt: now - 5), header: ["typ": .string("logout+jwt")]),
            "again": Spec(claims: Self.logoutClaims(sid: "s-1", subject: "user-1", issuedAt: now), header: ["typ": .string("logout+jwt")]),
        ]
        let tokens = try await Self.mint(specs)
        let logout = try #require(tokens["logout"])
        try await TestEnvironment.run(configure: Self.configure()) { (env: TestEnvironment) async throws in
            let session = Self.accessToken(subject: "user-1", sid: "s-1", issuedAt: now - 10)
            let otherSession = Self.accessToken(subject: "user-1", sid: "s-2", issuedAt: now - 10)
            let issuedAfter = Self.accessToken(subject: "user-1", sid: "s-1", issuedAt: now)
            let partnerSession = Self.accessToken(subject: "user-1", sid: "s-1", issuedAt: now - 10, issuer: Self.partnerIssuer)
            for token in [session, otherSession, issuedAfter, partnerSession] { #expect(try await Self.status(env, token) == 200) }

            let traffic = env.upstream.traffic
            let applied = try await Self.logOut(env, logout)
            Self.expectApplied(applied)
            try await env.expectNothingReachedUpstream(since: traffic, "the logout POST")
            #expect(env.failureLog.isEmpty, "an applied logout is not a failure: \(env.failureLogLines)")

            let revoked = try await env.request("/x", token: session)
            #expect(revoked.status == 401)
            #expect(revoked.json?["reason"] == .string("revoked"))
            #expect(try await Self.status(env, otherSession) == 200, "the same user's other session")
            #expect(try await Self.status(env, issuedAfter) == 200, "a token of the session issued after the logout")
            #expect(try await Self.status(env, partnerSession) == 200, "the same sid at another provider")
            #expect(try await Self.logoutCounts(env) == ["applied": 1])

            // The same logout token again: refused, and nothing moves.
            let linesBefore = env.failureLogLines.count
            await Self.expectRefused(try await Self.logOut(env, logout), .replayed, token: logout, env: env, linesBefore: linesBefore, "replay")
            #expect(try await Self.status(env, session) == 401)
            #expect(try await Self.status(env, otherSession) == 200)
            #expect(try await Self.status(env, issuedAfter) == 200)
            #expect(try await Self.logoutCounts(env) == ["applied": 1, "replayed": 1])

            // A new logout of the same session (another jti, a later iat) is no replay and covers what came before it.
            Self.expectApplied(try await Self.logOut(env, try #require(tokens["again"])))
            #expect(try await Self.status(env, issuedAfter) == 401)
            #expect(try await Self.status(env, otherSession) == 200)
            #expect(try await Self.logoutCounts(env) == ["applied": 2, "replayed": 1])
        }
    }

    // MARK: - 3. A logout naming only the subject

    @Test func aSubjectLogoutRevokesEveryOlderTokenOfThatSubjectOnly() async throws {
        let now = Self.now
        let tokens = try await Self.mint([
            "subject": Spec(
                claims: Self.logoutClaims(sid: nil, subject: "user-3", issuedAt: now - 5).merging(
                    ["aud": .array([.string("someone-else"), .string(Claims.audience)])]) { _, new in new },
                header: ["typ": .string("logout+jwt")]),
        ])
        try await TestEnvironment.run(configure: Self.configure()) { (env: TestEnvironment) async throws in
            let withSid = Self.accessToken(subject: "user-3", sid: "a", issuedAt: now - 10)
            let withoutSid = Self.accessToken(subject: "user-3", sid: nil, issuedAt: now - 10)
            let newer = Self.accessToken(subject: "user-3", sid: "b", issuedAt: now)
            let otherUser = Self.accessToken(subject: "user-4", sid: "a", issuedAt: now - 10)
            let otherProvider = Self.accessToken(subject: "user-3", sid: "a", issuedAt: now - 10, issuer: Self.partnerIssuer)
            for token in [withSid, withoutSid, newer, otherUser, otherProvider] { #expect(try await Self.status(env, token) == 200) }

            Self.expectApplied(try await Self.logOut(env, try #require(tokens["subject"])))
            for (token, what) in [(withSid, "with a sid"), (withoutSid, "without a sid")] {
                let response = try await env.request("/x", token: token)
                #expect(response.status == 401 && response.json?["reason"] == .string("revoked"), "user-3's older token \(what)")
            }
            #expect(try await Self.status(env, newer) == 200, "issued after the logout")
            #expect(try await Self.status(env, otherUser) == 200, "another subject")
            #expect(try await Self.status(env, otherProvider) == 200, "the same subject at another provider")
        }
    }

    // MARK: - 4. Drafts without exp; typ spellings

    /// A logout token without `exp` (drafts of the spec): taken while its `iat` is recent, refused `expired` once it is
    /// older than `max_logout_token_age` (30 s here; plus the 60 s leeway).
    @Test func aTokenWithoutExpIsJudgedByItsAge() async throws {
        let now = Self.now
        let tokens = try await Self.mint([
            "recent": Spec(claims: Self.logoutClaims(sid: "d-1", subject: "user-5", issuedAt: now - 5, lifetime: nil), header: ["typ": .null]),
            "stale": Spec(claims: Self.logoutClaims(sid: "d-2", subject: "user-5", issuedAt: now - 120, lifetime: nil), header: ["typ": .null]),
        ])
        try await TestEnvironment.run(configure: Self.configure(BackchannelLogoutSettings(maxTokenAge: .seconds(30)))) {
            (env: TestEnvironment) async throws in
            let recentSession = Self.accessToken(subject: "user-5", sid: "d-1", issuedAt: now - 10)
            let staleSession = Self.accessToken(subject: "user-5", sid: "d-2", issuedAt: now - 130)
            #expect(try await Self.status(env, staleSession) == 200)

            let stale = try #require(tokens["stale"])
            let linesBefore = env.failureLogLines.count
            await Self.expectRefused(try await Self.logOut(env, stale), .expired, token: stale, env: env, linesBefore: linesBefore, "stale draft")
            #expect(try await Self.status(env, staleSession) == 200, "a refused logout revokes nothing")

            Self.expectApplied(try await Self.logOut(env, try #require(tokens["recent"])))
            #expect(try await env.request("/x", token: recentSession).json?["reason"] == .string("revoked"))
            #expect(try await Self.logoutCounts(env) == ["applied": 1, "expired": 1])
        }
    }

    /// `backchannel_logout_require_typ`: a logout token without `typ` is refused; `logout+jwt` is matched
    /// case-insensitively, with or without `application/`.
    @Test func theLogoutTypIsRequiredWhenConfiguredInAnySpelling() async throws {
        let now = Self.now
        let spellings: [(String, JSONValue)] = [
            ("plain", .string("logout+jwt")), ("media_type", .string("application/logout+jwt")), ("upper", .string("Logout+JWT")),
            ("untyped", .null),
        ]
        var specs: [String: Spec] = [:]
        for (name, typ) in spellings {
            specs[name] = Spec(claims: Self.logoutClaims(sid: "t-\(name)", subject: "user-6", issuedAt: now - 5), header: ["typ": typ])
        }
        let tokens = try await Self.mint(specs)
        try await TestEnvironment.run(configure: Self.configure(BackchannelLogoutSettings(requireTyp: true))) {
            (env: TestEnvironment) async throws in
            let untyped = try #require(tokens["untyped"])
            let untypedSession = Self.accessToken(subject: "user-6", sid: "t-untyped", issuedAt: now - 10)
            await Self.expectRefused(
                try await Self.logOut(env, untyped), .wrongTokenType, token: untyped, env: env, linesBefore: 0, "no typ, typ required")
            #expect(try await Self.status(env, untypedSession) == 200)
            for (name, _) in spellings where name != "untyped" {
                let session = Self.accessToken(subject: "user-6", sid: "t-\(name)", issuedAt: now - 10)
                Self.expectApplied(try await Self.logOut(env, try #require(tokens[name])))
                #expect(try await Self.status(env, session) == 401, "typ \(name)")
            }
        }
    }

    // MARK: - 5. The request around the token

    @Test func theEndpointRefusesWrongRequestsAndNeverReachesTheUpstream() async throws {
        let now = Self.now
        let tokens = try await Self.mint([
            "valid": Spec(claims: Self.logoutClaims(sid: "r-1", subject: "user-7", issuedAt: now - 5), header: ["typ": .string("logout+jwt")]),
        ])
        let token = try #require(tokens["valid"])
        try await TestEnvironment.run(configure: Self.configure()) { (env: TestEnvironment) async throws in
            let traffic = env.upstream.traffic
            let form = [("Content-Type", "application/x-www-form-urlencoded")]
            let get = try await env.request(Self.path)
            #expect(get.status == 405)
            #expect(get.headers.first(name: "allow") == "POST")
            for provider in ["nobody", "plain", "test/extra", ""] {
                let response = try await Self.logOut(env, token, provider: provider)
                #expect(response.status == 404, "provider \"\(provider)\": \(response.status) \(response.body)")
            }
            let invalidRequests: [(String, [(String, String)], String)] = [
                ("json", [("Content-Type", "application/json")], #"{"logout_token":"\#(token)"}"#),
                ("no content type", [], "logout_token=" + token),
                ("no logout_token", form, "token=" + token),
                ("empty logout_token", form, "logout_token="),
                ("bad percent-encoding", form, "logout_token=%zz" + token),
            ]
            for (what, headers, body) in invalidRequests {
                let response = try await env.request(Self.path, method: .POST, headers: headers, body: body)
                #expect(response.status == 400, "\(what): \(response.status) \(response.body)")
                #expect(response.json?["error"] == .string("invalid_request"), "\(what): \(response.body)")
            }
            let huge = try await env.request(
                Self.path, method: .POST, headers: form, body: "logout_token=" + String(repeating: "a", count: 16 * 1024))
            #expect(huge.status == 413)
            #expect(env.failureLog.isEmpty, "requests without a token to judge are not logged: \(env.failureLogLines)")
            #expect(try await Self.logoutCounts(env)["applied"] == nil)

            // The token itself was fine all along (a provider's own Authorization header changes nothing), and with it
            // nothing reaches the upstream either.
            Self.expectApplied(try await env.request(
                Self.path, method: .POST, headers: form + [("Authorization", "Basic Y2xpZW50OnNlY3JldA==")], body: "logout_token=" + token))
            try await env.expectNothingReachedUpstream(since: traffic)
        }
    }

    /// §2.8: the provider's keys cannot be had: 503 (the provider retries), logged `keys_unavailable`, the `jti` not
    /// taken, so the retry is applied once the keys are back.
    @Test func keysThatCannotBeHadAre503AndTheRetryIsApplied() async throws {
        let now = Self.now
        let tokens = try await Self.mint([
            "logout": Spec(claims: Self.logoutClaims(sid: "k-1", subject: "user-8", issuedAt: now - 5), header: ["typ": .string("logout+jwt")]),
        ])
        let token = try #require(tokens["logout"])
        try await TestEnvironment.run(waitForKeys: false, configure: { configuration, jwks in
            Self.configure()(&configuration, jwks)
            jwks.update { $0.status = .internalServerError }
        }) { (env: TestEnvironment) async throws in
            let unavailable = try await Self.logOut(env, token)
            #expect(unavailable.status == 503)
            #expect(unavailable.json?["error"] == .string("temporarily_unavailable"))
            #expect(unavailable.headers.first(name: "retry-after") != nil)
            #expect(await Contract.eventually(timeout: .seconds(2)) { !env.failureLog.isEmpty })
            #expect(env.failureLog.first?["reason"] == .string("keys_unavailable"))
            #expect(env.failureLog.first?["status"] == .number("503"))

            env.jwks.update { $0.status = .ok }
            try await env.waitUntilReady()
            let session = Self.accessToken(subject: "user-8", sid: "k-1", issuedAt: now - 10)
            Self.expectApplied(try await Self.logOut(env, token))
            #expect(try await Self.status(env, session) == 401)
        }
    }

    // MARK: - 6. Revoked on every door

    /// After a logout POSTed over HTTP/2, the session's token is refused over HTTP/2, by `/.gatehouse/check` and by the
    /// ext_authz Check; the same user's other session passes all three.
    @Test func aLogoutOverHTTP2IsEnforcedOnEveryDoor() async throws {
        let now = Self.now
        let tokens = try await Self.mint([
            "logout": Spec(claims: Self.logoutClaims(sid: "h-1", subject: "user-9", issuedAt: now - 5), header: ["typ": .string("logout+jwt")]),
        ])
        let logout = try #require(tokens["logout"])
        try await TestEnvironment.run(configure: { configuration, jwks in
            Self.configure()(&configuration, jwks)
            configuration.listen.http2 = true
            configuration.extAuthz = ExtAuthzSettings(address: SocketAddressSetting(host: "127.0.0.1", port: 0))
        }) { (env: TestEnvironment) async throws in
            let extAuthzPort = try #require(env.gatehouse.extAuthzAddress?.port)
            let session = Self.accessToken(subject: "user-9", sid: "h-1", issuedAt: now - 10)
            let otherSession = Self.accessToken(subject: "user-9", sid: "h-2", issuedAt: now - 10)
            func get(_ name: String, _ token: String) -> HTTP2IntakeTests.Sent {
                HTTP2IntakeTests.Sent(name: name, headers: HTTP2IntakeTests.block(env, token: token))
            }
            let answers = try await HTTP2IntakeTests.send([
                get("before", session),
                HTTP2IntakeTests.Sent(
                    name: "logout",
                    headers: HTTP2IntakeTests.block(env, method: "POST", path: Self.path, [("content-type", "application/x-www-form-urlencoded")]),
                    body: "logout_token=" + logout),
                get("after", session), get("other", otherSession),
            ], to: env)
            #expect(answers["before"]?.status == 200, "\(String(describing: answers["before"]))")
            let applied = try #require(answers["logout"])
            #expect(applied.status == 200 && applied.json == ["logged_out": .bool(true)], "\(applied)")
            #expect(applied.value("cache-control") == "no-store", "\(applied)")
            let after = try #require(answers["after"])
            #expect(after.status == 401 && after.json?["reason"] == .string("revoked"), "\(after)")
            #expect(answers["other"]?.status == 200, "\(String(describing: answers["other"]))")
            #expect(env.upstream.requestCount == 2, "only the two admitted GETs reached the upstream")

            let check = try await env.request("/.gatehouse/check", token: session)
            #expect(check.status == 401)
            #expect(check.headers.first(name: "x-gatehouse-reason") == "revoked")
            #expect(try await env.request("/.gatehouse/check", token: otherSession).status == 200)

            let checks = try await ExtAuthzTests.call(extAuthzPort, [
                ExtAuthzTests.check("session", headers: [("authorization", "Bearer \(session)")]),
                ExtAuthzTests.check("other", headers: [("authorization", "Bearer \(otherSession)")]),
                // The logout endpoint is the client port's only: a Check naming it is an unknown path.
                ExtAuthzTests.check(
                    "logout", method: "POST", path: Self.path,
                    headers: [("content-type", "application/x-www-form-urlencoded"), ("authorization", "Bearer \(otherSession)")]),
            ])
            let denied = try #require(checks["session"])
            #expect(denied.allowed == false && denied.deniedStatus == 401 && denied.reason == "revoked", "\(denied)")
            #expect(checks["other"]?.allowed == true, "\(String(describing: checks["other"]))")
            #expect(checks["logout"]?.deniedStatus == 404, "\(String(describing: checks["logout"]))")
            #expect(try await Self.logoutCounts(env) == ["applied": 1])
        }
    }

    // MARK: - 7. Stores and replicas

    /// Two replicas on one PostgreSQL: a session logout posted to A is enforced by B within a second (measured from the
    /// POST), the same user's other session keeps working on B, and the logout token replayed to B is refused there.
    @Test func aLogoutPostedToOneReplicaIsEnforcedByTheOtherWithinOneSecond() async throws {
        let now = Self.now
        let rounds = 3
        var specs: [String: Spec] = [:]
        for round in 0..<rounds {
            specs["round-\(round)"] = Spec(
                claims: Self.logoutClaims(sid: "pg-\(round)", subject: "user-pg", issuedAt: now - 5), header: ["typ": .string("logout+jwt")])
        }
        specs["subject"] = Spec(claims: Self.logoutClaims(sid: nil, subject: "user-pg-2", issuedAt: now - 5), header: ["typ": .string("logout+jwt")])
        let tokens = try await Self.mint(specs)
        try await TestPostgres.with { postgres in
            try await TestEnvironment.run(configure: Self.withRevocationStore(postgres.url)) { (env: TestEnvironment) async throws in
                let otherSession = Self.accessToken(subject: "user-pg", sid: "pg-other", issuedAt: now - 10)
                try await env.withReplica { replica in
                    let portB = try #require(replica.proxyAddress?.port)
                    var delays: [Duration] = []
                    for round in 0..<rounds {
                        let session = Self.accessToken(subject: "user-pg", sid: "pg-\(round)", issuedAt: now - 10)
                        #expect(try await Self.status(env, session, port: portB) == 200)
                        let logout = try #require(tokens["round-\(round)"])
                        let start = ContinuousClock.now
                        Self.expectApplied(try await Self.logOut(env, logout))
                        let refused = try await Contract.eventually(timeout: .seconds(5)) {
                            try await Self.status(env, session, port: portB) == 401
                        }
                        delays.append(ContinuousClock.now - start)
                        #expect(refused, "replica B never refused round \(round)'s session")
                        let onB = try await env.request("/x", token: session, port: portB)
                        #expect(onB.json?["reason"] == .string("revoked"))
                        #expect(try await Self.status(env, otherSession, port: portB) == 200, "the same user's other session on B")
                        let replay = try await Self.logOut(env, logout, port: portB)
                        #expect(replay.status == 400, "a replay posted to B: \(replay.status) \(replay.body)")
                        #expect(replay.json?["error_description"] == .string("the logout token was refused: replayed"), "\(replay.body)")
                    }
                    print("back-channel logout A -> B via PostgreSQL: \(delays.map { "\($0)" }.joined(separator: ", "))")
                    #expect(delays.allSatisfy { $0 < .seconds(1) }, "\(delays)")

                    // A subject logout posted to B reaches A the same way.
                    let subjectSession = Self.accessToken(subject: "user-pg-2", sid: nil, issuedAt: now - 10)
                    #expect(try await Self.status(env, subjectSession) == 200)
                    let start = ContinuousClock.now
                    Self.expectApplied(try await Self.logOut(env, try #require(tokens["subject"]), port: portB))
                    #expect(try await Contract.eventually(timeout: .seconds(5)) { try await Self.status(env, subjectSession) == 401 })
                    #expect(ContinuousClock.now - start < .seconds(1))
                }
                // A replica started afterwards reads them from the table, and knows the jti was taken.
                try await env.withReplica { later in
                    let port = try #require(later.proxyAddress?.port)
                    let session = Self.accessToken(subject: "user-pg", sid: "pg-0", issuedAt: now - 10)
                    #expect(try await env.request("/x", token: session, port: port).json?["reason"] == .string("revoked"))
                    #expect(try await Self.status(env, otherSession, port: port) == 200)
                    let replay = try await Self.logOut(env, try #require(tokens["round-0"]), port: port)
                    #expect(replay.status == 400 && replay.json?["error_description"] == .string("the logout token was refused: replayed"),
                            "\(replay.status) \(replay.body)")
                }
            }
        }
    }

    // MARK: - 8. The configuration file

    /// A request to a served binary: its status and JSON body.
    static func served(
        _ process: ServedGatehouse, _ path: String, token: String? = nil, logoutToken: String? = nil
    ) async throws -> (status: Int, json: [String: JSONValue]?) {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(process.port)\(path)")
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        if let logoutToken {
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
            request.body = .bytes(ByteBuffer(string: "logout_token=" + logoutToken))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 1 << 20)
        return (Int(response.status.code), try? StrictJSON.parse(Array(String(buffer: body).utf8)).objectValue)
    }

    /// `gatehouse serve` with `backchannel_logout`, `backchannel_logout_require_typ` and `max_logout_token_age` in its
    /// file: the endpoint opens and both companions apply; `check-config` refuses them where they mean nothing.
    @Test func theConfigurationFileOpensTheEndpointWithItsCompanions() async throws {
        let now = Self.now
        let tokens = try await Self.mint([
            "valid": Spec(claims: Self.logoutClaims(sid: "f-1", subject: "user-11", issuedAt: now - 5), header: ["typ": .string("logout+jwt")]),
            "untyped": Spec(claims: Self.logoutClaims(sid: "f-2", subject: "user-11", issuedAt: now - 5), header: ["typ": .null]),
            "stale_draft": Spec(
                claims: Self.logoutClaims(sid: "f-3", subject: "user-11", issuedAt: now - 120, lifetime: nil),
                header: ["typ": .string("logout+jwt")]),
        ])
        let valid = try #require(tokens["valid"])
        let refusals = [
            ("untyped", try #require(tokens["untyped"]), "wrong_token_type"), ("stale_draft", try #require(tokens["stale_draft"]), "expired"),
        ]
        try await Contract.withPeers { jwks, upstream in
            let companions = "backchannel_logout = true\nbackchannel_logout_require_typ = true\nmax_logout_token_age = \"30s\"\n"
            let process = try await ServedGatehouse(toml: Contract.toml(upstreamPort: upstream.port, jwks: jwks, extra: companions))
            defer { process.stop() }
            let session = Self.accessToken(subject: "user-11", sid: "f-1", issuedAt: now - 10)
            #expect(try await Self.served(process, "/x", token: session).status == 200)
            let applied = try await Self.served(process, Self.path, logoutToken: valid)
            #expect(applied.status == 200 && applied.json == ["logged_out": .bool(true)], "\(applied)")
            #expect(try await Self.served(process, "/x", token: session).json?["reason"] == .string("revoked"))
            for (name, token, reason) in refusals {
                let refused = try await Self.served(process, Self.path, logoutToken: token)
                #expect(refused.status == 400, "\(name): \(refused)")
                #expect(refused.json?["error_description"] == .string("the logout token was refused: \(reason)"), "\(name): \(refused)")
            }
        }

        let directory = try Contract.makeDirectory("logout-config")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/gatehouse.toml"
        try """
            [upstream]
            url = "http://127.0.0.1:9"
            [[provider]]
            name = "test"
            type = "jwks"
            issuer = "\(Claims.issuer)"
            jwks_uri = "http://127.0.0.1:9/jwks.json"
            audiences = ["\(Claims.audience)"]
            max_logout_token_age = "5m"
            [[provider]]
            name = "g"
            type = "google"
            audiences = ["client-id"]
            backchannel_logout = true
            """.write(toFile: file, atomically: true, encoding: .utf8)
        let checked = try await Contract.runCLI(["check-config", "--config", file])
        #expect(checked.exitCode == 1, "\(checked)")
        #expect(checked.stderr.contains("provider[0].max_logout_token_age: only meaningful with backchannel_logout = true"), "\(checked.stderr)")
        #expect(checked.stderr.contains("provider[1].backchannel_logout: "), "not a google provider's key: \(checked.stderr)")
    }

    @Test func aLogoutOnSQLiteHoldsAcrossARestart() async throws {
        let directory = try Contract.makeDirectory("logout-sqlite")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let now = Self.now
        let tokens = try await Self.mint([
            "logout": Spec(claims: Self.logoutClaims(sid: "q-1", subject: "user-10", issuedAt: now - 5), header: ["typ": .string("logout+jwt")]),
        ])
        let session = Self.accessToken(subject: "user-10", sid: "q-1", issuedAt: now - 10)
        let otherSession = Self.accessToken(subject: "user-10", sid: "q-2", issuedAt: now - 10)
        let store = Self.withRevocationStore("sqlite:\(directory)/revocations.db")
        try await TestEnvironment.run(configure: store) { (env: TestEnvironment) async throws in
            Self.expectApplied(try await Self.logOut(env, try #require(tokens["logout"])))
            #expect(try await Self.status(env, session) == 401)
        }
        try await TestEnvironment.run(configure: store) { (env: TestEnvironment) async throws in
            #expect(try await env.request("/x", token: session).json?["reason"] == .string("revoked"), "after a restart")
            #expect(try await Self.status(env, otherSession) == 200)
        }
    }
}
