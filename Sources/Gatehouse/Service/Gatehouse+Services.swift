import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOConcurrencyHelpers
import NIOHTTP1
import GatehouseConfig
import GatehouseTelemetry
import GatehouseAuth
import GatehouseExchange
import GatehouseProxy
import GatehousePolicy

/// What every request is judged and forwarded with, built from one configuration: the key store, the services of a
/// configuration (verifier, gatekeeper, the head sent upstream), the DPoP nonce secret, the failure log's alarm.
extension Gatehouse {
    static func makeKeyStore(
        _ configuration: Configuration, client: HTTPClient, metrics: GatehouseMetrics, logger: Logger,
        carriedOver: [Int: (store: KeyStore, index: Int)] = [:]
    ) -> KeyStore {
        KeyStore(
            providers: configuration.providers.map {
                Provider(settings: $0, globalHeaders: configuration.headers.mappings,
                         resourceAudiences: ResourceTable.resourceAudiences(of: $0, in: configuration))
            },
            fetcher: JWKSFetcher(client: client, timeout: configuration.jwks.fetchTimeout),
            settings: configuration.jwks,
            logger: logger,
            carriedOver: carriedOver,
            onFetch: { provider, result in
                switch result {
                case .success(let count): metrics.jwksFetch(provider: provider, succeeded: true, keyCount: count)
                case .failure: metrics.jwksFetch(provider: provider, succeeded: false, keyCount: nil)
                }
            })
    }

    /// At least 32 bytes of secret: shorter ones would make nonces guessable offline.
    static func dpopNonceSecret(_ settings: DPoPSettings) throws -> [UInt8] {
        guard let secret = settings.nonceSecret else { return (0..<32).map { _ in UInt8.random(in: 0...255) } }
        let value: String
        do {
            value = try secret.resolve()
        } catch {
            throw StartError(description: "[dpop] nonce_secret: \(error)")
        }
        guard value.utf8.count >= 32 else { throw StartError(description: "[dpop] nonce_secret must be at least 32 bytes") }
        return Array(value.utf8)
    }

    /// A failure-log line not written whole (a full disk, a file-size limit, a closed pipe): the security team
    /// must learn that its stream has a gap. Counted in `gatehouse_failure_log_write_errors_total`, and said
    /// in the operational log at most once per 10 s (docs/reference.md §8).
    static func reportFailureLogWriteError(path: String, metrics: GatehouseMetrics, logger: Logger) -> @Sendable (Int32) -> Void {
        let report = RateLimitedReport()
        return { error in
            metrics.failureLogWriteError()
            report.occurred("failure log write failed; lines are being lost", metadata: [
                "gatehouse.failure_log": "\(path == "-" ? "stdout" : path)", "gatehouse.error": "\(String(cString: strerror(error)))",
            ], to: logger)
        }
    }

    /// What every request is judged and forwarded with, from one configuration. Replaced whole on reload.
    /// (Internal: the request core's tests build them without a listener.)
    func makeServices(_ configuration: Configuration) -> ProxyServices {
        let introspectors: [Introspector]
        do {
            introspectors = try Introspector.all(
                for: keyStore.providers, client: httpClient, timeout: configuration.jwks.fetchTimeout,
                leeway: configuration.verification.leeway.components.seconds, metrics: metrics, logger: logger)
        } catch {
            // Checked at start (init): only a secret that went away since gets here; its provider answers 503.
            logger.error("introspection providers unusable", metadata: ["gatehouse.error": "\(error)"])
            introspectors = []
        }
        let verifier = TokenVerifier(
            keyStore: keyStore, verification: configuration.verification, tokenMaxBytes: configuration.listen.tokenMaxBytes,
            onCacheLookup: { [metrics] hit in metrics.verifyCache(hit: hit) }, onRejectedHit: { [metrics] in metrics.rejectedCacheHit() },
            introspectors: introspectors,
            reviewers: TokenReviewer.all(
                for: configuration.providers, providers: keyStore.providers, client: httpClient, timeout: configuration.jwks.fetchTimeout,
                metrics: metrics))
        var upstreamHead = UpstreamRequestHead(configuration)
        upstreamHead.assertion = configuration.assertion.map { [metrics] in AssertionSigner($0, onSigned: { metrics.assertionSigned(succeeded: $0) }) }
        var checkHead = upstreamHead
        checkHead.forwardToken = configuration.extAuthz?.forwardToken ?? configuration.upstream.forwardToken
        let userinfo = userinfoEnricher()
        let exchange = ExchangeSettings(configuration, upstreamHead: upstreamHead, remembersTokens: userinfo == nil)
        return ProxyServices(
            exchange: exchange,
            gatekeeper: Gatekeeper(
                routes: exchange.routes, verifier: verifier, verification: configuration.verification, userinfo: userinfo,
                revocations: revocations.list, senderConstraints: senderConstraints(configuration),
                providerNames: configuration.providers.map(\.name),
                ownAudiences: configuration.providers.map { provider in
                    // Cognito's and Firebase's audiences are their own claims: never widened (`Provider(settings:)`).
                    let widened = !ResourceTable.resourceAudiences(of: provider, in: configuration).isEmpty
                        && provider.type != .cognito && provider.type != .firebase
                    return widened ? Set(provider.audiences) : nil
                }),
            checkHead: checkHead,
            failureLog: failureLog,
            revocations: revocations,
            tokenRevoker: ProviderTokenRevoker(
                endpoints: ProviderTokenRevoker.endpoints(for: configuration.providers), client: httpClient,
                timeout: configuration.jwks.fetchTimeout),
            metrics: metrics,
            logger: logger,
            tracer: tracer, wallClock: wallClock)
    }

    func senderConstraints(_ configuration: Configuration) -> SenderConstraints {
        let dpop = configuration.dpop
        let revocations = self.revocations
        var sharedReplay: (@Sendable (DPoPReplayCache.Key, Int64, any EventLoop) -> EventLoopFuture<Bool>)?
        if revocations.sharesProofs {
            sharedReplay = { key, expiresAt, eventLoop in revocations.claimProof(key, expiresAt: expiresAt, on: eventLoop) }
        }
        return SenderConstraints(
            providerModes: configuration.providers.map(\.dpop),
            proofLifetime: dpop.proofLifetime.components.seconds,
            leeway: configuration.verification.leeway.components.seconds,
            externalOrigin: dpop.externalURL,
            listenerScheme: configuration.listen.tlsCertificatePath == nil ? "http" : "https",
            proofMaxBytes: configuration.listen.tokenMaxBytes,
            nonces: dpop.nonce ? DPoPNonces(secret: dpopNonceSecret, lifetime: dpop.nonceLifetime.components.seconds) : nil,
            replay: dpopReplay,
            sharedReplay: sharedReplay,
            forwardedCertificate: ForwardedClientCertificate(configuration.listen))
    }

    /// Cognito userinfo enrichment when any provider has `userinfo = true`.
    func userinfoEnricher() -> UserinfoEnricher? {
        let endpoints = UserinfoEnricher.endpoints(for: configuration.providers)
        guard !endpoints.isEmpty else { return nil }
        return UserinfoEnricher(
            client: httpClient, endpoints: endpoints, timeout: configuration.jwks.fetchTimeout,
            capacity: max(configuration.verification.cacheSize, 1000), logger: logger)
    }
}
