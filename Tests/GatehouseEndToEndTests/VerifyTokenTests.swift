import Foundation
@testable import Gatehouse
import Logging
import Testing
import GatehouseSyntax
import GatehouseConfig
import GatehouseTokens
import GatehouseAuth
import GatehouseVocabulary

/// `gatehouse verify-token`: the same verdict `serve` gives, fetching keys from the real JWKS server.
@Suite(.timeLimit(.minutes(2)))
struct VerifyTokenTests {
    private func configuration(_ jwks: TestJWKSServer) -> Configuration {
        var provider = ProviderSettings(name: "test", type: .jwks)
        provider.issuer = Claims.issuer
        provider.jwksURI = jwks.jwksURL
        provider.audiences = [Claims.audience]
        return Configuration(upstream: UpstreamSettings(url: URL(string: "http://127.0.0.1:9")!), providers: [provider])
    }

    @Test func validTokenYieldsProviderAndClaims() async throws {
        let jwks = try await TestJWKSServer(jwks: TestSigner.jwks([.rsa]))
        let result = await TokenInspection.verify(
            TestSigner.rsa.token(claims: Claims.valid()) + "\n", configuration: configuration(jwks), logger: Logger(label: "test"))
        await jwks.close()
        let identity = try result.get()
        #expect(identity.providerName == "test")
        #expect(identity.subject == "user-1")
    }

    @Test func expiredTokenYieldsReasonAndExplanation() async throws {
        let jwks = try await TestJWKSServer(jwks: TestSigner.jwks([.rsa]))
        let result = await TokenInspection.verify(
            TestSigner.rsa.token(claims: Claims.valid(lifetime: -100)), configuration: configuration(jwks), logger: Logger(label: "test"))
        await jwks.close()
        guard case .failure(let failure) = result else {
            Issue.record("an expired token verified")
            return
        }
        #expect(failure.reason == .expired)
        #expect(TokenInspection.explanation(failure).hasPrefix("The access token expired. (exp "))
    }

    /// An unknown kid is judged by `serve`'s rule (docs/reference.md §3.8): a fresh token's kid is refetched and
    /// refused with that evidence; an old token's is refused on the key set just fetched.
    @Test func anUnknownKidIsJudgedByServesRule() async throws {
        let jwks = try await TestJWKSServer(jwks: TestSigner.jwks([.rsa]))
        let now = Int64(Date().timeIntervalSince1970)
        let fresh = TestSigner.ec.with(keyID: "fresh").token(claims: Claims.valid())
        let old = TestSigner.ec.with(keyID: "old").token(claims: Claims.valid(extra: ["iat": .number(String(now - 3600))]))
        for (token, detail) in [(fresh, "no key with this kid, even after a refetch"),
                                (old, "no key with this kid: the token was issued before the provider's keys were last listed, without it")] {
            let result = await TokenInspection.verify(token, configuration: configuration(jwks), logger: Logger(label: "test"))
            guard case .failure(let failure) = result else {
                Issue.record("a token of an unknown kid verified")
                continue
            }
            #expect(failure.reason == .unknownKey && failure.detail == detail)
        }
        await jwks.close()
    }
}
