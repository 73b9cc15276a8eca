import Testing
import GatehouseSyntax
import GatehouseTokens

/// What a verification keeps without allocating more than its one object (issue 57): the token's digest inline in its
/// key, the revocation key made from it when first asked for, the assertion kept for the verification.
@Suite struct VerifiedIdentityTests {
    private func identity(claims: [String: JSONValue], digest: TokenKey?) -> VerifiedIdentity {
        VerifiedIdentity(
            providerIndex: 0, providerName: "idp", claims: claims, encodedPayload: "e30", keyID: nil, expiry: 5000, tokenDigest: digest)
    }

    @Test func aDigestKeyIsTheTokensSHA256() {
        // FIPS 180-2's "abc" vector.
        let expected = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        #expect(TokenKey.sha256(of: "abc"[...]).bytes.map { String($0, radix: 16).leftPadded } .joined() == expected)
        #expect(TokenKey.sha256(of: "abc"[...]) == TokenKey("abc"[...]).sha256())
        #expect(TokenKey.sha256(of: "abc"[...]) != TokenKey.sha256(of: "abd"[...]))
        #expect(TokenKey.sha256(of: "abc"[...]) != TokenKey("abc"[...]), "a digest key never equals a token key")
        #expect(TokenKey("abc"[...]).tokenBytes == Array("abc".utf8))
        #expect(TokenKey.sha256(of: "abc"[...]).tokenBytes.isEmpty)
    }

    @Test func theRevocationKeyIsTheDigestsUnlessTheTokenHasAJTI() {
        let digest = TokenKey.sha256(of: "abc"[...])
        #expect(identity(claims: [:], digest: digest).revocationKey
            == "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(identity(claims: ["jti": .string("j-1")], digest: digest).revocationKey == "jti:idp:j-1")
        #expect(identity(claims: [:], digest: nil).revocationKey == nil)
        // A verified JWS keeps its bytes, not their digest: the key is the same, hashed when first asked for.
        let fromBytes = VerifiedIdentity(
            providerIndex: 0, providerName: "idp", claims: [:], encodedPayload: "e30", keyID: nil, expiry: 5000, token: Array("abc".utf8))
        #expect(fromBytes.revocationKey == "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(fromBytes.with(claims: ["sub": .string("u1")]).revocationKey == fromBytes.revocationKey)
    }

    @Test func anEnrichedIdentityKeepsTheVerificationsRevocationKeyAndAssertion() {
        let verified = identity(claims: ["jti": .string("j-1")], digest: TokenKey.sha256(of: "abc"[...]))
        let enriched = verified.with(claims: ["sub": .string("u1")])
        #expect(enriched.revocationKey == "jti:idp:j-1", "the key of the claims the token was verified with")
        #expect(enriched.subject == "u1")

        enriched.keep(SignedAssertion(value: "a.b.c", signer: 7, refreshAt: 100, copied: []))
        #expect(verified.signedAssertion?.value == "a.b.c", "kept for the verification, whichever copy signed it")
        #expect(verified.with(claims: [:]).signedAssertion?.signer == 7)
        #expect(identity(claims: [:], digest: nil).signedAssertion == nil, "another verification has its own")
    }
}

private extension String {
    var leftPadded: String { count == 1 ? "0" + self : self }

    /// Claims held as signed read the same whichever way they are read: one at a time from the bytes, and (after two
    /// long strings were read, or once every claim was asked for) from the dictionary the identity then keeps; an
    /// enriched copy presents its own claims.
    @Test func signedClaimsReadTheSameBeforeAndAfterTheyAreKept() throws {
        let payload = #"{"iss":"https://issuer.example.com","email":"someone@example.com","sub":"u1","n":7,"a":["x"],"e":"\u00e9"}"#
        let object = try #require(try LazyJSONObject.read(Array(payload.utf8)))
        let expected = try #require(try StrictJSON.parse(Array(payload.utf8)).objectValue)
        let signed = VerifiedIdentity(
            providerIndex: 0, providerName: "idp", claimSet: .signed(object), payload: .text("e30"), keyID: nil, expiry: 5000)
        for _ in 0..<3 {
            for (name, value) in expected { #expect(signed.claim(name) == value, "\(name)") }
            #expect(signed["missing"] == nil)
        }
        #expect(signed.claims == expected)
        #expect(signed.subject == "u1")
        let enriched = signed.with(claims: ["sub": .string("u2")])
        #expect(enriched.claim("sub") == .string("u2") && enriched.claim("iss") == nil)
        let untouched = VerifiedIdentity(
            providerIndex: 0, providerName: "idp", claimSet: .signed(object), payload: .text("e30"), keyID: nil, expiry: 5000)
        #expect(untouched.claims == expected)
        #expect(untouched.claim("email") == expected["email"])
    }
}
