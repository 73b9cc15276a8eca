import Crypto
import NIOConcurrencyHelpers
import Testing
import GatehouseTokens
@testable import GatehouseSyntax
import GatehouseExchange
@testable import GatehouseConfig

/// When an assertion is signed again (docs/reference.md §15), on a clock of the test's own: half its lifetime, never
/// past the token's `exp`, a changed signer or claim value; and what it says.
struct AssertionSignerTests {
    static let now: Int64 = 1_800_000_000

    static func identity(expiry: Int64 = now + 3600, claims: [String: JSONValue] = ["sub": .string("u1"), "iss": .string("https://idp")])
        -> VerifiedIdentity
    {
        VerifiedIdentity(providerIndex: 0, providerName: "idp", claims: claims, encodedPayload: "", keyID: nil, expiry: expiry)
    }

    static func signer(_ key: AssertionKey = .generated(), lifetime: Duration = .seconds(60), claims: [String] = [])
        -> (AssertionSigner, NIOLockedValueBox<Int>)
    {
        var settings = AssertionSettings(issuer: "https://gh", audience: "svc", signingKey: key)
        settings.lifetime = lifetime
        settings.claims = claims
        let count = NIOLockedValueBox(0)
        return (AssertionSigner(settings, onSigned: { if $0 { count.withLockedValue { $0 += 1 } } }), count)
    }

    static func payload(_ assertion: String?) -> [String: JSONValue] {
        let parts = assertion?.split(separator: ".") ?? []
        guard parts.count == 3, let bytes = Base64URL.decode(Array(parts[1].utf8)) else { return [:] }
        return (try? StrictJSON.parse(bytes).objectValue) ?? [:]
    }

    @Test func keptUntilHalfItsLifetimeThenSignedAgain() {
        let (signer, signed) = Self.signer()
        let identity = Self.identity()
        let first = signer.assertion(for: identity, now: Self.now)
        #expect(signer.assertion(for: identity, now: Self.now + 29) == first)
        #expect(signed.withLockedValue { $0 } == 1)
        let second = signer.assertion(for: identity, now: Self.now + 30)
        #expect(second != first && signed.withLockedValue { $0 } == 2)
        #expect(Self.payload(second)["iat"] == .number(String(Self.now + 30)) && Self.payload(second)["exp"] == .number(String(Self.now + 90)))
    }

    @Test func anExpiryBoundByTheTokenIsNeverSignedAgain() {
        let (signer, signed) = Self.signer()
        let identity = Self.identity(expiry: Self.now + 20)
        let first = signer.assertion(for: identity, now: Self.now)
        #expect(Self.payload(first)["exp"] == .number(String(Self.now + 20)))
        #expect(signer.assertion(for: identity, now: Self.now + 19) == first)
        #expect(signed.withLockedValue { $0 } == 1)
    }

    @Test func aNewSigningKeySignsAgainAtOnceAndTheSameContentDoesNot() {
        let key = AssertionKey.generated()
        let identity = Self.identity()
        let (before, _) = Self.signer(key)
        let first = signer(before, identity)
        let (sameAgain, countSame) = Self.signer(key)
        #expect(sameAgain.assertion(for: identity, now: Self.now + 1) == first && countSame.withLockedValue { $0 } == 0)
        let (swapped, countSwapped) = Self.signer(.generated())
        #expect(swapped.assertion(for: identity, now: Self.now + 1) != first && countSwapped.withLockedValue { $0 } == 1)

        func signer(_ signer: AssertionSigner, _ identity: VerifiedIdentity) -> String? { signer.assertion(for: identity, now: Self.now) }
    }

    @Test func aChangedClaimValueSignsAgain() {
        let (signer, signed) = Self.signer(claims: ["groups"])
        let identity = Self.identity(claims: ["sub": .string("u1"), "groups": .array([.string("a")])])
        let first = signer.assertion(for: identity, now: Self.now)
        #expect(Self.payload(first)["groups"] == .array([.string("a")]))
        let enriched = identity.with(claims: ["sub": .string("u1"), "groups": .array([.string("a"), .string("b")])])
        let second = signer.assertion(for: enriched, now: Self.now + 1)
        #expect(second != first && Self.payload(second)["groups"] == .array([.string("a"), .string("b")]))
        #expect(signer.assertion(for: enriched, now: Self.now + 2) == second && signed.withLockedValue { $0 } == 2)
    }

    @Test func itSaysWhoByWhomAndNothingUnproven() throws {
        let key = AssertionKey.generated()
        let (signer, _) = Self.signer(key)
        let identity = Self.identity(claims: [
            "sub": .string("u1"), "iss": .string("https://idp"), "email": .string("a@b"),
            "cnf": .object(["jkt": .string("thumb"), "jwk": .object([:])]),
        ])
        let assertion = try #require(signer.assertion(for: identity, now: Self.now))
        let claims = Self.payload(assertion)
        #expect(claims["iss"] == .string("https://gh") && claims["aud"] == .string("svc") && claims["sub"] == .string("u1"))
        #expect(claims["provider"] == .string("idp") && claims["token_iss"] == .string("https://idp"))
        #expect(claims["email"] == nil, "only configured claims")
        #expect(claims["cnf"] == .object(["jkt": .string("thumb")]))
        // The signature verifies with the published key.
        let parts = assertion.split(separator: ".")
        guard case .p256(let publicKey, _) = key.material else { Issue.record("a P-256 key"); return }
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: Base64URL.decode(Array(parts[2].utf8)) ?? [])
        #expect(publicKey.isValidSignature(signature, for: Array((parts[0] + "." + parts[1]).utf8)))
    }
}
