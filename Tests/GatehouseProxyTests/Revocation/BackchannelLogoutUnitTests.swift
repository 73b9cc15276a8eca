import NIOHTTP1
import Testing
import GatehouseTokenFixtures
import GatehouseTokens
@testable import GatehouseAuth
import GatehouseConfig
import GatehouseSyntax
@testable import GatehouseProxy
import GatehouseExchange

/// Back-channel logout's parts without a socket (docs/reference.md §7.3): its configuration, what a logout token revokes,
/// how its `jti` is remembered, how its request is read. End to end, with PyJWT's tokens: `BackchannelLogoutTests`.
struct BackchannelLogoutUnitTests {
    private static func provider(_ extra: String, type: String = "jwks") -> String {
        ConfigFixture.upstream + """
            [[provider]]
            name = "idp"
            type = "\(type)"
            issuer = "https://issuer.example.test"
            jwks_uri = "http://127.0.0.1:8999/jwks.json"
            audiences = ["client-1"]
            \(extra)

            """
    }

    @Test func backchannelLogoutIsReadWithItsDefaultsAndCheckConfigNamesTheURLToRegister() throws {
        let off = try Configuration.parse(toml: Self.provider(""))
        #expect(off.providers[0].backchannelLogout == nil)
        #expect(!off.summary.contains("backchannel"))
        let on = try Configuration.parse(toml: Self.provider("backchannel_logout = true"))
        #expect(on.providers[0].backchannelLogout == BackchannelLogoutSettings(requireTyp: false, maxTokenAge: .seconds(300)))
        #expect(on.summary.contains(
            "back-channel logout of idp: register backchannel_logout_uri = <this Gatehouse's public origin>/.gatehouse/backchannel-logout/idp"),
            "\(on.summary)")
        let tuned = try Configuration.parse(toml: Self.provider("""
            backchannel_logout = true
            backchannel_logout_require_typ = true
            max_logout_token_age = "90s"
            """))
        #expect(tuned.providers[0].backchannelLogout == BackchannelLogoutSettings(requireTyp: true, maxTokenAge: .seconds(90)))
    }

    @Test func backchannelLogoutMistakesAreReportedAtTheirKeys() {
        let cases: [(String, String, String)] = [
            (Self.provider("max_logout_token_age = \"1m\""), "provider[0].max_logout_token_age", "only meaningful with backchannel_logout = true"),
            (Self.provider("backchannel_logout = true\nmax_logout_token_age = \"0s\""), "provider[0].max_logout_token_age", "more than 0s"),
            (Self.provider("backchannel_logout = true\nmax_logout_token_age = \"48h\""), "provider[0].max_logout_token_age", "at most 24h"),
            (Self.provider("backchannel_logout = \"yes\""), "provider[0].backchannel_logout", "boolean"),
            (ConfigFixture.upstream + """
                [[provider]]
                name = "g"
                type = "google"
                audiences = ["x"]
                backchannel_logout = true
                """, "provider[0].backchannel_logout", "only by oidc, jwks"),
        ]
        for (toml, keyPath, words) in cases {
            let issues = ConfigFixture.issues(toml)
            #expect(issues.contains { $0.keyPath == keyPath && $0.message.contains(words) }, "\(keyPath): \(issues)")
        }
    }

    private func identity(provider: String = "idp", sid: String?, subject: String = "u1", iat: Int64?) -> VerifiedIdentity {
        var claims: [String: JSONValue] = ["sub": .string(subject)]
        if let sid { claims["sid"] = .string(sid) }
        if let iat { claims["iat"] = .number(String(iat)) }
        return VerifiedIdentity(providerIndex: 0, providerName: provider, claims: claims, encodedPayload: "", keyID: nil, expiry: 9000)
    }

    @Test func aProviderSessionCoversTheTokensOfThatSessionIssuedAtOrBeforeTheLogoutOnly() {
        let list = RevocationList()
        list.apply(.providerSession(provider: "idp", sid: "s1", issuedBefore: 2000), now: 100)
        #expect(list.isRevoked(identity(sid: "s1", iat: 1999), token: "t"))
        #expect(list.isRevoked(identity(sid: "s1", iat: 2000), token: "t"), "issued in the logout's second counts as before it")
        #expect(list.isRevoked(identity(sid: "s1", iat: nil), token: "t"), "a token without iat counts as older")
        #expect(!list.isRevoked(identity(sid: "s1", iat: 2001), token: "t"), "a sign-in after the logout")
        #expect(!list.isRevoked(identity(sid: "s2", iat: 1), token: "t"), "the user's other session")
        #expect(!list.isRevoked(identity(sid: nil, iat: 1), token: "t"))
        #expect(!list.isRevoked(identity(provider: "other", sid: "s1", iat: 1), token: "t"), "sids are the provider's own")
        list.apply(.providerSession(provider: "idp", sid: "s1", issuedBefore: 1500), now: 100)  // a late, older notification
        #expect(list.isRevoked(identity(sid: "s1", iat: 1800), token: "t"))
        list.removeExpired(now: 1_000_000)
        #expect(list.isRevoked(identity(sid: "s1", iat: 1800), token: "t"), "kept as subject entries are")
        let session = Revocation.providerSession(provider: "idp", sid: "a \"quoted\" sid", issuedBefore: 1_700_000_000)
        #expect(Revocation(notificationPayload: session.notificationPayload) == session)
    }

    private func logout(provider: String = "idp", sid: String?, subject: String?, jti: String = "j1", iat: Int64 = 1000) -> LogoutToken {
        LogoutToken(provider: provider, sid: sid, subject: subject, jti: jti, issuedAt: iat, replayableUntil: iat + 900)
    }

    @Test func aLogoutTokenRevokesItsSessionOrElseItsSubjectCutAtItsIat() {
        #expect(logout(sid: "s1", subject: "u1").revocation(now: 5000) == .providerSession(provider: "idp", sid: "s1", issuedBefore: 1000))
        #expect(logout(sid: nil, subject: "u1").revocation(now: 5000) == .subject(provider: "idp", subject: "u1", issuedBefore: 1000))
        #expect(logout(sid: "s1", subject: nil, iat: 6000).revocation(now: 5000) == .providerSession(provider: "idp", sid: "s1", issuedBefore: 5000),
                "an iat in the future (within the leeway) cuts at now")
        #expect(logout(sid: nil, subject: nil).revocation(now: 5000) == nil)
        // The same token always revokes the same: a replay, or a retry after a 503, moves nothing.
        #expect(logout(sid: "s1", subject: "u1").revocation(now: 5000) == logout(sid: "s1", subject: "u1").revocation(now: 9000))
        let key = logout(sid: "s1", subject: nil).replayKey
        #expect(key.hasPrefix("logout:") && key.utf8.count == "logout:".utf8.count + 64)
        #expect(key == logout(sid: "s2", subject: nil).replayKey, "the jti is what is remembered")
        #expect(key != logout(provider: "other", sid: "s1", subject: nil).replayKey, "jtis are the provider's own")
        #expect(key != logout(sid: "s1", subject: nil, jti: "j2").replayKey)
    }

    @Test func takenJTIsAreRememberedUntilTheirTokenLapsesWithinABound() {
        let memory = LogoutReplayMemory(capacity: 3)
        memory.insert("a", until: 100, now: 10)
        #expect(memory.contains("a", now: 100))
        #expect(!memory.contains("a", now: 101))
        memory.insert("b", until: 200, now: 10)
        memory.insert("c", until: 300, now: 10)
        memory.insert("d", until: 400, now: 150)  // full: the expired "a" goes
        #expect(memory.contains("b", now: 150) && memory.contains("c", now: 150) && memory.contains("d", now: 150))
        memory.insert("e", until: 500, now: 150)  // full of live ones: the soonest to lapse goes
        #expect(!memory.contains("b", now: 150))
        #expect(memory.contains("c", now: 150) && memory.contains("e", now: 150))
    }

    @Test func theRequestIsAFormWithOneLogoutToken() throws {
        let form = "application/x-www-form-urlencoded"
        let plain = try? BackchannelLogoutResponder.logoutToken(body: Array("logout_token=a.b.c".utf8), contentType: form).get()
        #expect(plain == "a.b.c")
        let escaped = try? BackchannelLogoutResponder.logoutToken(body: Array("x=1&logout_token=a%2Eb.c".utf8), contentType: form + "; charset=UTF-8").get()
        #expect(escaped == "a.b.c")
        for (body, contentType) in [
            ("logout_token=a.b.c", "application/json"), ("logout_token=a.b.c", nil), ("", form), ("logout_token=", form),
            ("other=1", form), ("logout_token=%zz", form), ("logout_token=\u{1}", form),
        ] as [(String, String?)] {
            #expect(throws: BackchannelLogoutResponder.InvalidRequest.self, "\(body) \(contentType ?? "-")") {
                try BackchannelLogoutResponder.logoutToken(body: Array(body.utf8), contentType: contentType).get()
            }
        }
    }

    @Test func theEndpointIsOneProviderNameUnderItsPrefix() {
        #expect(OwnEndpoint(path: "/.gatehouse/backchannel-logout/idp") == .backchannelLogout(provider: "idp"))
        #expect(OwnEndpoint(path: "/.gatehouse/backchannel-logout/") == nil)
        #expect(OwnEndpoint(path: "/.gatehouse/backchannel-logout/idp/x") == nil)
        #expect(OwnEndpoint.backchannelLogout(provider: "idp").allows(.POST))
        #expect(!OwnEndpoint.backchannelLogout(provider: "idp").allows(.GET))
    }
}
