import Testing
import GatehouseTokens
@testable import GatehouseAuth
import GatehouseSyntax
import GatehouseConfig

struct RevocationListTests {
    private func identity(subject: String = "u1", jti: String? = nil, iat: Int64 = 1000, expiry: Int64 = 5000) -> VerifiedIdentity {
        var claims: [String: JSONValue] = ["sub": .string(subject), "iat": .number(String(iat))]
        if let jti { claims["jti"] = .string(jti) }
        return VerifiedIdentity(providerIndex: 0, providerName: "p", claims: claims, encodedPayload: "", keyID: nil, expiry: expiry)
    }

    private func revokeToken(_ list: RevocationList, _ identity: VerifiedIdentity, token: Substring, now: Int64) {
        list.apply(RevocationList.tokenRevocation(identity, token: token), now: now)
    }

    @Test func jtiRevocationsBelongToTheirProvider() {
        let list = RevocationList()
        revokeToken(list, identity(jti: "same"), token: "t1", now: 100)
        let other = VerifiedIdentity(
            providerIndex: 1, providerName: "other", claims: ["sub": .string("u1"), "jti": .string("same")], encodedPayload: "",
            keyID: nil, expiry: 5000)
        #expect(list.isRevoked(identity(jti: "same"), token: "t1"))
        #expect(!list.isRevoked(other, token: "t2"))
    }

    @Test func revokedTokenIsRecognizedByJTIOrDigest() {
        let list = RevocationList()
        #expect(!list.isRevoked(identity(jti: "a"), token: "t1"))
        revokeToken(list, identity(jti: "a"), token: "t1", now: 100)
        #expect(list.isRevoked(identity(jti: "a"), token: "another-encoding"))
        #expect(!list.isRevoked(identity(jti: "b"), token: "t1"))
        revokeToken(list, identity(), token: "t2", now: 100)
        #expect(list.isRevoked(identity(), token: "t2"))
        #expect(!list.isRevoked(identity(), token: "t3"))
    }

    @Test func subjectRevocationCoversOnlyEarlierTokensOfThatSubject() throws {
        let list = RevocationList()
        list.apply(try #require(RevocationList.subjectRevocation(identity(), now: 2000)), now: 2000)
        #expect(list.isRevoked(identity(iat: 1999), token: "x"))
        #expect(list.isRevoked(identity(iat: 2000), token: "x"), "issued in the cut-off second counts as before it")
        #expect(!list.isRevoked(identity(iat: 2001), token: "x"))
        #expect(!list.isRevoked(identity(subject: "u2", iat: 1), token: "x"))
    }

    @Test func aSubjectKeepsItsLatestCutOffWhateverTheOrderEntriesArrive() {
        let list = RevocationList()
        list.apply(.subject(provider: "p", subject: "u1", issuedBefore: 3000), now: 100)
        list.apply(.subject(provider: "p", subject: "u1", issuedBefore: 2000), now: 100)  // an older notification, late
        #expect(list.isRevoked(identity(iat: 2500), token: "x"))
    }

    /// R09: an entry outlives its token's `exp` by `retentionAfterExpiry` (the largest leeway), so a token
    /// still inside its leeway stays signed out whatever is written, cleaned up or reloaded meanwhile.
    @Test func entriesOutliveTheirTokensLeewayAndArePrunedAfterIt() {
        let retention = Revocation.retentionAfterExpiry
        #expect(retention >= VerificationSettings.maxLeeway.components.seconds)
        let list = RevocationList()
        revokeToken(list, identity(jti: "old", expiry: 150), token: "t", now: 100)
        revokeToken(list, identity(jti: "new", expiry: 10_000), token: "t", now: 200)  // the next sign-out, after exp
        #expect(list.isRevoked(identity(jti: "old", expiry: 150), token: "t"), "expired 50 s ago: still within any leeway")
        list.removeExpired(now: 150 + retention - 1)
        #expect(list.isRevoked(identity(jti: "old", expiry: 150), token: "t"))
        list.removeExpired(now: 150 + retention + 1)
        #expect(!list.isRevoked(identity(jti: "old", expiry: 150), token: "t"))
        #expect(list.isRevoked(identity(jti: "new", expiry: 10_000), token: "t"))
        #expect(list.snapshot.tokens.count == 1)
    }

    @Test func aTokenSignedOutInsideItsLeewayIsKept() {
        let list = RevocationList()
        revokeToken(list, identity(jti: "late", expiry: 95), token: "t", now: 100)
        #expect(list.isRevoked(identity(jti: "late", expiry: 95), token: "t"))
    }

    @Test func entriesFromAStorePastTheirRetentionAreNotKept() {
        let list = RevocationList()
        let now = Int64(100_000)
        let retention = Revocation.retentionAfterExpiry
        list.apply([
            .token(key: "jti:gone", expiresAt: now - retention - 1), .token(key: "jti:leeway", expiresAt: now - 30),
            .token(key: "jti:live", expiresAt: now + 500),
        ], now: now)
        #expect(list.snapshot.tokens == ["jti:leeway": now - 30, "jti:live": now + 500])
    }

    @Test func aSessionKeepsItsFirstOwnerHereButTheStoresOwnerWins() {
        let list = RevocationList()
        list.apply(.session(id: "s", owner: "p\nbob", expiresAt: 500), now: 100)
        // Another caller here does not take it...
        list.apply(.session(id: "s", owner: "p\ncarol", expiresAt: 600), now: 100)
        #expect(list.session("s", now: 100)?.owner == "p\nbob")
        // ...the store's owner does (another replica's binding reached it first), with the store's expiry.
        list.apply(.session(id: "s", owner: "p\nalice", expiresAt: 400), now: 100, fromStore: true)
        #expect(list.session("s", now: 100) == RevocationList.SessionBinding(owner: "p\nalice", expiresAt: 400))
        list.apply([.session(id: "s", owner: "p\nbob", expiresAt: 700)], now: 100)
        #expect(list.session("s", now: 100)?.owner == "p\nalice")
        // A load of the store is its word too.
        list.apply([.session(id: "s", owner: "p\ndave", expiresAt: 800)], now: 100, fromStore: true)
        #expect(list.session("s", now: 100)?.owner == "p\ndave")
    }

    @Test func notificationPayloadsRoundTrip() {
        let entries: [Revocation] = [
            .token(key: "jti:abc", expiresAt: 1_700_000_000),
            .subject(provider: "google", subject: "tab\there \"quoted\" ünïcode", issuedBefore: 1_700_000_001),
        ]
        for entry in entries {
            #expect(Revocation(notificationPayload: entry.notificationPayload) == entry)
        }
        #expect(Revocation(notificationPayload: Revocation.reloadPayload) == nil)
        #expect(Revocation(notificationPayload: "not json") == nil)
        let huge = Revocation.token(key: String(repeating: "k", count: 9000), expiresAt: 1)
        #expect(huge.notificationPayload == Revocation.reloadPayload)
    }

    @Test func formEncodingEscapesEverythingButUnreservedBytes() throws {
        #expect(FormEncoding.encode("a b+c/é") == "a+b%2Bc%2F%C3%A9")
        #expect(try FormEncoding.value(named: "token", in: Array("a=1&token=x%20y".utf8)) == "x y")
        #expect(try FormEncoding.value(named: "token", in: Array("a=1".utf8)) == nil)
        #expect(throws: FormEncoding.Invalid.self) { try FormEncoding.value(named: "token", in: Array("token=%4".utf8)) }
        #expect(throws: FormEncoding.Invalid.self) { try FormEncoding.value(named: "token", in: Array("token=%FF".utf8)) }
    }
}
