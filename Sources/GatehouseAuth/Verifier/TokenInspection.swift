import AsyncHTTPClient
import Foundation
public import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import GatehouseSyntax
public import GatehouseConfig
public import GatehouseTokens
import GatehouseTelemetry
public import GatehouseVocabulary
import GatehousePolicy

/// `gatehouse verify-token`: one token judged exactly as `serve` would judge it on a route with no
/// extra requirements, fetching the issuing provider's keys first.
public enum TokenInspection {
    /// A DPoP proof to judge with the token, and the request it is for.
    public struct Proof: Sendable {
        public var proof: String
        public var method: String
        public var url: String
        public init(proof: String, method: String, url: String) {
            self.proof = proof
            self.method = method
            self.url = url
        }
    }

    /// - Parameter proof: judged as `serve` judges the `DPoP` header of that request (without the replay
    ///   cache and nonces, which belong to a running fleet); nil: the token is presented as a bearer token.
    public static func verify(
        _ token: String, proof: Proof? = nil, configuration: Configuration, logger: Logger
    ) async -> Result<VerifiedIdentity, AuthFailure> {
        var clientConfiguration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        clientConfiguration.timeout = .init(
            connect: TimeAmount(configuration.jwks.fetchTimeout), read: TimeAmount(configuration.jwks.fetchTimeout))
        let group = MultiThreadedEventLoopGroup.singleton
        let client = HTTPClient(eventLoopGroup: group, configuration: clientConfiguration, backgroundActivityLogger: logger)
        let providers = configuration.providers.map { Provider(settings: $0, globalHeaders: configuration.headers.mappings) }
        let keyStore = KeyStore(
            providers: providers, fetcher: JWKSFetcher(client: client, timeout: configuration.jwks.fetchTimeout),
            settings: configuration.jwks, logger: logger)
        let introspectors: [Introspector]
        do {
            introspectors = try Introspector.all(
                for: providers, client: client, timeout: configuration.jwks.fetchTimeout,
                leeway: configuration.verification.leeway.components.seconds, metrics: GatehouseMetrics(), logger: logger)
        } catch {
            try? await client.shutdown()
            return .failure(AuthFailure(.introspectionUnavailable, "\(error)"))
        }
        // An opaque token is introspected, as serve would (`type = "introspection"` providers).
        let verifier = TokenVerifier(
            keyStore: keyStore, verification: configuration.verification, tokenMaxBytes: configuration.listen.tokenMaxBytes,
            onCacheLookup: { _ in }, introspectors: introspectors)
        let trimmed = token.trimmingCharacters(in: .whitespacesAndNewlines)
        let issuer = (try? CompactJWS.parse(trimmed[...], maxBytes: configuration.listen.tokenMaxBytes))?.claimSet["iss"]?.stringValue
        if let issuer, let index = verifier.providerByIssuer[issuer] {
            try? await keyStore.refresh(provider: index, on: group.next()).get()
            if keyStore.lastFetchFailed(provider: index) { keyStore.usePersistedKeys(provider: index) }
        }
        let now = Int64(Date().timeIntervalSince1970)
        let result: Result<VerifiedIdentity, AuthFailure>
        switch verifier.verify(trimmed[...], allowedProviders: [], now: now, on: group.next()) {
        case .now(let verdict):
            result = verdict
        case .later(let future):
            result = (try? await future.get()) ?? .failure(AuthFailure(.keysUnavailable, "key refetch failed"))
        }
        try? await client.shutdown()
        guard case .success(let identity) = result else { return result }
        return senderCheck(identity, token: trimmed[...], proof: proof, configuration: configuration, now: now, on: group.next())
    }

    private static func senderCheck(
        _ identity: VerifiedIdentity, token: Substring, proof: Proof?, configuration: Configuration, now: Int64, on eventLoop: any EventLoop
    ) -> Result<VerifiedIdentity, AuthFailure> {
        var evidence = SenderEvidence.none
        var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/")
        var origin: String?
        if let proof {
            guard let url = URLComponents(string: proof.url), let scheme = url.scheme, let host = url.host else {
                return .failure(AuthFailure(.invalidDPoPProof, "--url is not an absolute URL"))
            }
            origin = scheme + "://" + (host.contains(":") ? "[\(host)]" : host) + (url.port.map { ":\($0)" } ?? "")
            head = HTTPRequestHead(version: .http1_1, method: HTTPMethod(rawValue: proof.method.uppercased()), uri: url.percentEncodedPath.isEmpty ? "/" : url.percentEncodedPath)
            evidence = SenderEvidence(scheme: .dpop, proof: .one(proof.proof.trimmingCharacters(in: .whitespacesAndNewlines)[...]))
        }
        let constraints = SenderConstraints(
            providerModes: configuration.providers.map(\.dpop), proofLifetime: configuration.dpop.proofLifetime.components.seconds,
            leeway: configuration.verification.leeway.components.seconds, externalOrigin: origin, listenerScheme: "https",
            proofMaxBytes: configuration.listen.tokenMaxBytes, nonces: nil, replay: DPoPReplayCache(capacity: 1), sharedReplay: nil,
            forwardedCertificate: nil)
        switch constraints.check(identity, token: token, evidence: evidence, head: head, rule: .defaultRule, now: now, on: eventLoop) {
        case .now(nil): return .success(identity)
        case .now(let failure?): return .failure(failure)
        case .later: return .failure(AuthFailure(.dpopUnavailable, "no shared replay store here"))
        }
    }

    /// Why a failure code was given, in words, for app developers and security teams.
    public static func explanation(_ failure: AuthFailure) -> String {
        failure.reason.message + " (" + failure.detail + ")"
    }
}
