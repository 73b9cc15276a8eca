@testable import Gatehouse
import Testing

struct RevocationListTests {
    private func identity(subject: String = "u1", jti: String? = nil, iat: Int64 = 1000, expiry: Int64 = 5000) -> VerifiedIdentity {
        var claims: [String: JSONValue] = ["sub": .string(subject), "iat": .number(String(iat))]
        if let jti { claims["jti"] = .string(jti) }
        return VerifiedIdentity(providerIndex: 0, providerName: "p", claims: claims, encodedPayload: "", keyID: nil, expiry: expiry)
    }

    @Test func revokedTokenIsRecognizedByJTIOrDigest() {
        let list = RevocationList()
        #expect(!list.isRevoked(identity(jti: "a"), token: "t1"))
        list.revokeToken(identity(jti: "a"), token: "t1", now: 100)
        #expect(list.isRevoked(identity(jti: "a"), token: "another-encoding"))
        #expect(!list.isRevoked(identity(jti: "b"), token: "t1"))
        list.revokeToken(identity(), token: "t2", now: 100)
        #expect(list.isRevoked(identity(), token: "t2"))
        #expect(!list.isRevoked(identity(), token: "t3"))
    }

    @Test func subjectRevocationCoversOnlyEarlierTokensOfThatSubject() {
        let list = RevocationList()
        list.revokeSubject(identity(), now: 2000)
        #expect(list.isRevoked(identity(iat: 1999), token: "x"))
        #expect(!list.isRevoked(identity(iat: 2000), token: "x"))
        #expect(!list.isRevoked(identity(subject: "u2", iat: 1), token: "x"))
    }

    @Test func expiredEntriesArePrunedOnTheNextWrite() {
        let list = RevocationList()
        list.revokeToken(identity(jti: "old", expiry: 150), token: "t", now: 100)
        list.revokeToken(identity(jti: "new"), token: "t", now: 200)
        #expect(!list.isRevoked(identity(jti: "old", expiry: 150), token: "t"))
        #expect(list.isRevoked(identity(jti: "new"), token: "t"))
    }
}
