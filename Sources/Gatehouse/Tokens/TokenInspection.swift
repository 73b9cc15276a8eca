import AsyncHTTPClient
import Foundation
public import Logging
import NIOCore
import NIOPosix

/// `gatehouse verify-token`: one token judged exactly as `serve` would judge it on a route with no
/// extra requirements, fetching the issuing provider's keys first.
public enum TokenInspection {
    public static func verify(_ token: String, configuration: Configuration, logger: Logger) async -> Result<VerifiedIdentity, AuthFailure> {
        var clientConfiguration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        clientConfiguration.timeout = .init(
            connect: TimeAmount(configuration.jwks.fetchTimeout), read: TimeAmount(configuration.jwks.fetchTimeout))
        let group = MultiThreadedEventLoopGroup.singleton
        let client = HTTPClient(eventLoopGroup: group, configuration: clientConfiguration, backgroundActivityLogger: logger)
        let providers = configuration.providers.map { Provider(settings: $0, globalHeaders: configuration.headers.mappings) }
        let keyStore = KeyStore(
            providers: providers, fetcher: JWKSFetcher(client: client, timeout: configuration.jwks.fetchTimeout),
            settings: configuration.jwks, logger: logger)
        let verifier = TokenVerifier(
            keyStore: keyStore, verification: configuration.verification, tokenMaxBytes: configuration.listen.tokenMaxBytes,
            onCacheLookup: { _ in })
        let trimmed = token.trimmingCharacters(in: .whitespacesAndNewlines)
        let issuer = (try? CompactJWS.parse(trimmed[...], maxBytes: configuration.listen.tokenMaxBytes))?.claims["iss"]?.stringValue
        if let issuer, let index = verifier.providerByIssuer[issuer] {
            try? await keyStore.refresh(provider: index, on: group.next()).get()
            if keyStore.lastFetchFailed(provider: index) { keyStore.usePersistedKeys(provider: index) }
        }
        let now = Int64(Date().timeIntervalSince1970)
        let result: Result<VerifiedIdentity, AuthFailure>
        switch verifier.verify(trimmed[...], allowedProviders: [], now: now, on: group.next()) {
        case .done(let verdict):
            result = verdict
        case .pending(let future):
            result = (try? await future.get()) ?? .failure(AuthFailure(.keysUnavailable, "key refetch failed"))
        }
        try? await client.shutdown()
        return result
    }

    /// Why a failure code was given, in words, for app developers and security teams.
    public static func explanation(_ failure: AuthFailure) -> String {
        AuthErrorResponse.message(for: failure.reason) + " (" + failure.detail + ")"
    }
}
