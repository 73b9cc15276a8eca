import AsyncHTTPClient
import Foundation
public import Logging
public import NIOCore
import NIOConcurrencyHelpers
import NIOHTTP1
public import NIOPosix
import NIOSSL
public import ServiceLifecycle
import UnixSignals

/// A running Gatehouse: the client listener, the admin listener, the key refresher.
///
/// As a `Service` it starts, serves until graceful shutdown, then stops accepting and drains
/// in-flight requests for up to `drain_timeout`. Tests use `start()` / `runBackgroundWork()` / `stop()`.
public final class Gatehouse: Service, Sendable {
    /// The configuration in force: the one given at start, or the last reload applied to it
    /// (restart-only sections keep their starting values, so listeners and keys never disagree with it).
    public var configuration: Configuration { activeConfiguration.withLockedValue { $0 } }
    public let metrics: GatehouseMetrics
    /// The providers' keys. A reload that changes providers or `[jwks]` replaces the store,
    /// carrying over the keys of providers whose settings did not change.
    var keyStore: KeyStore { keyStores.withLockedValue { $0 } }
    private let keyStores: NIOLockedValueBox<KeyStore>
    /// Each store, as it comes into service: `runBackgroundWork` starts its refresher.
    private let keyStoreGenerations: AsyncStream<KeyStore>
    private let newKeyStore: AsyncStream<KeyStore>.Continuation
    let revocations: RevocationService
    /// DPoP proofs accepted here, kept across reloads (`[dpop] replay_cache_size` needs a restart).
    let dpopReplay: DPoPReplayCache
    /// `[dpop] nonce_secret`, or random bytes of this process: replicas share nonces only with a configured secret.
    private let dpopNonceSecret: [UInt8]
    /// The services new requests use (after `start()`); a reload swaps them, requests in flight keep theirs.
    private let servicesHandle = NIOLockedValueBox<ServicesHandle?>(nil)
    /// What the next request is judged with (after `start()`); the request core's tests drive it directly.
    var currentServices: ProxyServices? { servicesHandle.withLockedValue { $0 }?.services }
    private let activeConfiguration: NIOLockedValueBox<Configuration>
    private let configurationPath: String?
    /// The client port's TLS context: new connections take the current one, so a SIGHUP can
    /// swap in renewed certificates without dropping any connection.
    private let serverTLS = NIOLockedValueBox<NIOSSLContext?>(nil)
    private let failureLog: FailureLog
    private let httpClient: HTTPClient
    private let group: any EventLoopGroup
    private let logger: Logger
    private let running = NIOLockedValueBox<Running?>(nil)

    private struct Running {
        struct ClientPort {
            var proxy: any Channel
            var quiesce: ConnectionDrainer
            var pools: ProxyServer.Pools
        }

        /// Nil for an authorizer only.
        var client: ClientPort?
        var admin: any Channel
        /// `[ext_authz]`'s listener and its drainer, when configured.
        var extAuthz: (channel: any Channel, quiesce: ConnectionDrainer)?
    }

    /// - Parameters:
    ///   - failureLog: overrides `[failure_log] path` (tests, embedding).
    ///   - configurationPath: the file SIGHUP re-reads.
    public init(
        configuration: Configuration,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger,
        failureLog destination: FailureLogDestination? = nil,
        configurationPath: String? = nil
    ) throws {
        self.activeConfiguration = NIOLockedValueBox(configuration)
        self.configurationPath = configurationPath
        self.group = eventLoopGroup
        self.logger = logger
        let metrics = GatehouseMetrics()
        self.metrics = metrics
        let settings = configuration.failureLog
        let key = try settings.pseudonymizeKeyFile.map { path in
            guard settings.pseudonymize else { return [UInt8]() }
            guard let data = FileManager.default.contents(atPath: path), !data.isEmpty else {
                throw FailureLog.OpenError(description: "cannot read pseudonymize_key_file \(path)")
            }
            return Array(data)
        }
        self.failureLog = try FailureLog(
            destination: destination ?? (settings.path == "-" ? .standardOutput : .file(settings.path)),
            maxLinesPerSecond: settings.maxLinesPerSecond,
            pseudonymKey: settings.pseudonymize ? key : nil,
            writeFailed: Self.reportFailureLogWriteError(path: settings.path, metrics: metrics, logger: logger))
        var clientConfiguration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        clientConfiguration.timeout = .init(
            connect: TimeAmount(configuration.jwks.fetchTimeout), read: TimeAmount(configuration.jwks.fetchTimeout))
        self.httpClient = HTTPClient(eventLoopGroup: eventLoopGroup, configuration: clientConfiguration, backgroundActivityLogger: logger)
        do {
            self.revocations = RevocationService(
                store: try (configuration.revocation ?? RevocationSettings()).makeStore(logger: logger), logger: logger)
        } catch {
            try? httpClient.syncShutdown()
            throw StartError(description: "\(error)")
        }
        self.dpopReplay = DPoPReplayCache(capacity: configuration.dpop.replayCacheSize)
        do {
            self.dpopNonceSecret = try Self.dpopNonceSecret(configuration.dpop)
        } catch {
            try? httpClient.syncShutdown()
            throw error
        }
        let keyStore = Self.makeKeyStore(configuration, client: httpClient, metrics: metrics, logger: logger)
        if let provider = configuration.providers.first(where: {
            $0.type == .kubernetes && $0.apiServer == nil && KubernetesPreset.apiServerFromEnvironment() == nil
        }) {
            try? httpClient.syncShutdown()
            throw StartError(description: "provider \(provider.name): no api_server, and KUBERNETES_SERVICE_HOST is not set (not in a pod?)")
        }
        for provider in configuration.providers where provider.type == .entra && provider.tenants.contains("*") {
            logger.warning("entra provider accepts tokens of every tenant (tenants = [\"*\"]): any Entra organisation's users get in", metadata: [
                "gatehouse.provider": "\(provider.name)",
            ])
        }
        do {
            _ = try Introspector.all(for: keyStore.providers, client: httpClient, timeout: .seconds(1), leeway: 0, metrics: metrics, logger: logger)
        } catch {
            try? httpClient.syncShutdown()
            throw StartError(description: "\(error)")
        }
        self.keyStores = NIOLockedValueBox(keyStore)
        (keyStoreGenerations, newKeyStore) = AsyncStream.makeStream(of: KeyStore.self)
        newKeyStore.yield(keyStore)
    }

    private static func makeKeyStore(
        _ configuration: Configuration, client: HTTPClient, metrics: GatehouseMetrics, logger: Logger,
        carriedOver: [Int: (store: KeyStore, index: Int)] = [:]
    ) -> KeyStore {
        KeyStore(
            providers: configuration.providers.map { Provider(settings: $0, globalHeaders: configuration.headers.mappings) },
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
    private static func dpopNonceSecret(_ settings: DPoPSettings) throws -> [UInt8] {
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

    /// Why `start()` could not start, in words for the operator.
    public struct StartError: Error, CustomStringConvertible {
        public var description: String
    }

    /// The bound client-port address (after `start()`).
    public var proxyAddress: SocketAddress? { running.withLockedValue { $0?.client?.proxy.localAddress } }
    /// The client-port listener while running (tests check it is closed after `stop()`).
    var proxyListener: (any Channel)? { running.withLockedValue { $0?.client?.proxy } }
    /// The bound `[ext_authz]` address (after `start()`), when configured.
    public var extAuthzAddress: SocketAddress? { running.withLockedValue { $0?.extAuthz?.channel.localAddress } }
    /// The bound admin-port address (after `start()`).
    public var adminAddress: SocketAddress? { running.withLockedValue { $0?.admin.localAddress } }

    /// Binds both listeners. Key fetching starts with `runBackgroundWork()`.
    public func start() async throws {
        let configuration = self.configuration
        let handle = ServicesHandle(makeServices(configuration))
        servicesHandle.withLockedValue { $0 = handle }
        // An authorizer only (`[ext_authz]` without `[upstream]`) opens no client port.
        let client = configuration.servesClientPort ? try await bindClientPort(configuration, handle: handle) : nil
        let admin: any Channel
        do {
            admin = try await AdminServer.bind(
                host: configuration.admin.address.host, port: configuration.admin.address.port, group: group,
                keyStatus: { [keyStores] in keyStores.withLockedValue { $0 }.status() }, revocations: revocations, dpopReplay: dpopReplay, metrics: metrics,
                logger: logger)
        } catch {
            try? await client?.proxy.close()
            throw StartError(description: "cannot listen on \(configuration.admin.address) ([admin] address): \(error)")
        }
        var extAuthz: (channel: any Channel, quiesce: ConnectionDrainer)?
        if let settings = configuration.extAuthz {
            do {
                extAuthz = try await bindExtAuthz(settings, handle: handle, configuration: configuration)
            } catch {
                try? await client?.proxy.close()
                try? await admin.close()
                throw error as? StartError ?? StartError(description: "cannot listen on \(settings.address) ([ext_authz] address): \(error)")
            }
        }
        running.withLockedValue { $0 = Running(client: client, admin: admin, extAuthz: extAuthz) }
        logger.info("gatehouse listening", metadata: [
            "gatehouse.listen": "\(client?.proxy.localAddress.map { "\($0)" } ?? "off (an authorizer only)")",
            "gatehouse.admin": "\(admin.localAddress.map { "\($0)" } ?? "?")",
            "gatehouse.upstream": "\(configuration.servesClientPort ? "\(configuration.upstream.url)" : "none")",
            "gatehouse.ext_authz": "\(extAuthz?.channel.localAddress.map { "\($0)" } ?? "off")",
        ])
    }

    /// The client port, its upstream pools and its drainer.
    private func bindClientPort(_ configuration: Configuration, handle: ServicesHandle) async throws -> Running.ClientPort {
        let initialTLS = try Self.serverTLS(configuration.listen)
        serverTLS.withLockedValue { $0 = initialTLS }
        let tls = initialTLS == nil ? nil : serverTLS
        let upstreamURL = configuration.upstream.url
        let isTLS = upstreamURL.scheme == "https"
        let target = UpstreamConnectionPool.Target(
            host: upstreamURL.host ?? "127.0.0.1",
            port: upstreamURL.port ?? (isTLS ? 443 : 80),
            connectTimeout: TimeAmount(configuration.upstream.connectTimeout),
            tls: isTLS ? try Self.upstreamTLS(configuration.upstream) : nil)
        let server = ProxyServer(
            services: handle, upstream: target, upstreamProtocol: configuration.upstream.protocolVersion,
            maxHeaderBytes: configuration.listen.maxHeaderBytes, http2: configuration.listen.http2,
            idleTimeout: TimeAmount(configuration.listen.idleTimeout), drainTimeout: TimeAmount(configuration.listen.drainTimeout),
            tls: tls)
        let listen = configuration.listen.address
        do {
            let (proxy, quiesce, pools) = try await server.bind(host: listen.host, port: listen.port, group: group)
            return Running.ClientPort(proxy: proxy, quiesce: quiesce, pools: pools)
        } catch {
            throw StartError(description: "cannot listen on \(listen) ([listen] address): \(error)")
        }
    }

    /// The `[ext_authz]` port: Checks judged by the same services as the client port's requests.
    private func bindExtAuthz(
        _ settings: ExtAuthzSettings, handle: ServicesHandle, configuration: Configuration
    ) async throws -> (channel: any Channel, quiesce: ConnectionDrainer) {
        let keyStores = self.keyStores
        let revocations = self.revocations
        let prefix = settings.httpPathPrefix.hasSuffix("/") ? String(settings.httpPathPrefix.dropLast()) : settings.httpPathPrefix
        let context = ExtAuthzContext(
            handle: handle, maxHeaderBytes: configuration.listen.maxHeaderBytes, httpPathPrefix: prefix,
            isReady: { AdminHandler.isReady(keyStores.withLockedValue { $0 }.status(), store: revocations.status) },
            metrics: ExtAuthzMetrics(registry: metrics.registry))
        let server = ExtAuthzServer(
            context: context, tls: try Self.extAuthzTLS(settings), idleTimeout: TimeAmount(configuration.listen.idleTimeout),
            drainTimeout: TimeAmount(configuration.listen.drainTimeout))
        return try await server.bind(host: settings.address.host, port: settings.address.port, group: group)
    }

    /// A failure-log line not written whole (a full disk, a file-size limit, a closed pipe): the security team
    /// must learn that its stream has a gap. Counted in `gatehouse_failure_log_write_errors_total`, and said
    /// in the operational log at most once per 10 s (docs/reference.md §8).
    private static func reportFailureLogWriteError(path: String, metrics: GatehouseMetrics, logger: Logger) -> @Sendable (Int32) -> Void {
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
        // Providers are rebuilt for their header mappings (a reload may change `[headers]`); their keys stay in the key store.
        let providers = configuration.providers.map { Provider(settings: $0, globalHeaders: configuration.headers.mappings) }
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
        let routes = RouteTable(configuration.routes)
        let allMappings = providers.flatMap(\.headerMappings) + configuration.headers.mappings
        let upstreamHead = UpstreamRequestHead(
            identityHeaderNames: IdentityHeaderNames(mappings: allMappings),
            headerMappings: providers.map(\.headerMappings),
            forwardClaimsJSON: configuration.headers.forwardClaimsJSON,
            forwardToken: configuration.upstream.forwardToken,
            tokenHeaderName: configuration.verification.tokenHeader,
            forwardedCertificate: Self.forwardedCertificate(configuration.listen))
        var checkHead = upstreamHead
        checkHead.forwardToken = configuration.extAuthz?.forwardToken ?? configuration.upstream.forwardToken
        return ProxyServices(
            gatekeeper: Gatekeeper(
                routes: routes, verifier: verifier, verification: configuration.verification, userinfo: userinfoEnricher(),
                revocations: revocations.list, senderConstraints: senderConstraints(configuration),
                providerNames: configuration.providers.map(\.name)),
            routes: routes,
            upstreamHead: upstreamHead,
            checkHead: checkHead,
            failureLog: failureLog,
            revocations: revocations,
            tokenRevoker: ProviderTokenRevoker(
                endpoints: ProviderTokenRevoker.endpoints(for: configuration.providers), client: httpClient,
                timeout: configuration.jwks.fetchTimeout),
            metrics: metrics,
            responseTimeout: TimeAmount(configuration.upstream.timeout),
            idleTimeout: TimeAmount(configuration.listen.idleTimeout),
            verification: configuration.verification,
            scheme: configuration.listen.tlsCertificatePath == nil ? "http" : "https",
            retryAfterSeconds: 5,
            logger: logger)
    }

    private func senderConstraints(_ configuration: Configuration) -> SenderConstraints {
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
            forwardedCertificate: Self.forwardedCertificate(configuration.listen))
    }

    private static func forwardedCertificate(_ listen: ListenSettings) -> ForwardedClientCertificate? {
        listen.clientCertificateHeader.map {
            ForwardedClientCertificate(headerName: $0, format: listen.clientCertificateHeaderFormat, trustedProxies: listen.trustedProxies)
        }
    }

    /// Re-reads the certificate and key files (renewed in place); a pair that does not load keeps the old one.
    private func reloadCertificates(_ listen: ListenSettings) {
        guard serverTLS.withLockedValue({ $0 }) != nil else { return }
        do {
            if let context = try Self.serverTLS(listen) { serverTLS.withLockedValue { $0 = context } }
        } catch {
            logger.error("reload: TLS certificate not replaced", metadata: ["gatehouse.error": "\(error)"])
        }
    }

    /// `[listen] tls_cert` / `tls_key`: TLS on the client port; ALPN offers `h2` unless `[listen] http2 = false`.
    private static func serverTLS(_ listen: ListenSettings) throws -> NIOSSLContext? {
        guard let certificatePath = listen.tlsCertificatePath, let keyPath = listen.tlsKeyPath else { return nil }
        return try serverTLS(
            table: "[listen]", certificatePath: certificatePath, keyPath: keyPath, alpn: listen.http2 ? ["h2", "http/1.1"] : ["http/1.1"],
            clientCAPath: listen.clientCAPath, verification: listen.clientAuth == .require ? .noHostnameVerification : .optionalVerification)
    }

    /// TLS on the `[ext_authz]` port, when configured: ALPN `h2` (gRPC) and `http/1.1`; with `client_ca`, only
    /// callers with a certificate from it.
    private static func extAuthzTLS(_ settings: ExtAuthzSettings) throws -> NIOSSLContext? {
        guard let certificatePath = settings.tlsCertificatePath, let keyPath = settings.tlsKeyPath else { return nil }
        return try serverTLS(
            table: "[ext_authz]", certificatePath: certificatePath, keyPath: keyPath, alpn: ["h2", "http/1.1"],
            clientCAPath: settings.clientCAPath, verification: .noHostnameVerification)
    }

    /// A listener's TLS context; with `clientCAPath`, client certificates of that CA are asked for (`verification`:
    /// required, or optional).
    private static func serverTLS(
        table: String, certificatePath: String, keyPath: String, alpn: [String], clientCAPath: String?,
        verification: CertificateVerification
    ) throws -> NIOSSLContext {
        do {
            let chain = try NIOSSLCertificate.fromPEMFile(certificatePath).map(NIOSSLCertificateSource.certificate)
            let key = try NIOSSLPrivateKey(file: keyPath, format: .pem)
            var tls = TLSConfiguration.makeServerConfiguration(certificateChain: chain, privateKey: .privateKey(key))
            tls.applicationProtocols = alpn
            if let caPath = clientCAPath {
                do {
                    tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(caPath))
                } catch {
                    throw StartError(description: "cannot load \(table) client_ca \(caPath): \(error)")
                }
                tls.certificateVerification = verification
            }
            return try NIOSSLContext(configuration: tls)
        } catch let error as StartError {
            throw error
        } catch {
            throw StartError(description: "cannot load \(table) tls_cert \(certificatePath) / tls_key \(keyPath): \(error)")
        }
    }

    /// https upstreams: certificates verified against `ca_file` when given, else the system's trust store.
    private static func upstreamTLS(_ upstream: UpstreamSettings) throws -> NIOSSLContext {
        var tls = TLSConfiguration.makeClientConfiguration()
        if upstream.protocolVersion == .http2 { tls.applicationProtocols = ["h2"] }
        if let caFile = upstream.caFile {
            do {
                tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(caFile))
            } catch {
                throw StartError(description: "cannot load [upstream] ca_file \(caFile): \(error)")
            }
        }
        return try NIOSSLContext(configuration: tls)
    }

    /// Cognito userinfo enrichment when any provider has `userinfo = true`.
    private func userinfoEnricher() -> UserinfoEnricher? {
        let endpoints = UserinfoEnricher.endpoints(for: configuration.providers)
        guard !endpoints.isEmpty else { return nil }
        return UserinfoEnricher(
            client: httpClient, endpoints: endpoints, timeout: configuration.jwks.fetchTimeout,
            capacity: max(configuration.verification.cacheSize, 1000), logger: logger)
    }

    /// Fetches and refreshes keys, follows the revocation store, and writes the failure log's
    /// once-a-second summaries, until cancelled.
    public func runBackgroundWork() async {
        let failureLog = self.failureLog
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                // One refresher per key store; a store retired by a reload stops its own.
                await withTaskGroup(of: Void.self) { refreshers in
                    for await keyStore in self.keyStoreGenerations {
                        refreshers.addTask {
                            await KeyRefresher(keyStore: keyStore, eventLoopGroup: self.group, minRefresh: keyStore.minRefresh).run()
                        }
                    }
                }
            }
            group.addTask { await self.revocations.run() }
            group.addTask {
                while (try? await Task.sleep(for: .seconds(1))) != nil { failureLog.flushSuppressed() }
            }
        }
    }

    /// Stops accepting, lets in-flight requests finish for up to `drainTimeout`, then closes everything.
    public func stop(drainTimeout: Duration? = nil) async {
        guard let running = running.withLockedValue({ state -> Running? in defer { state = nil }; return state }) else {
            try? await httpClient.shutdown()
            return
        }
        // Both ports stop accepting and let what is in flight finish, for `drain_timeout` at most.
        var drains: [EventLoopFuture<Void>] = []
        for drainer in [running.client?.quiesce, running.extAuthz?.quiesce].compactMap({ $0 }) {
            let drained = group.next().makePromise(of: Void.self)
            drainer.initiateShutdown(promise: drained)
            drains.append(drained.futureResult)
        }
        let finished = group.next().makePromise(of: Void.self)
        EventLoopFuture.andAllComplete(drains, on: finished.futureResult.eventLoop).cascade(to: finished)
        let timeout = TimeAmount(drainTimeout ?? configuration.listen.drainTimeout)
        let deadline = group.next().scheduleTask(in: timeout) { finished.succeed() }
        try? await finished.futureResult.get()
        deadline.cancel()
        running.client?.quiesce.closeRemaining()
        running.extAuthz?.quiesce.closeRemaining()
        try? await running.admin.close()
        await running.client?.pools.closeAll()
        try? await httpClient.shutdown()
    }

    /// SIGHUP: reopen the failure-log file (logrotate moved it) and re-read the configuration file.
    private func reopenFailureLogOnHangup() async {
        for await _ in await UnixSignalsSequence(trapping: .sighup).cancelOnGracefulShutdown() {
            await hangUp()
        }
    }

    /// What SIGHUP does: reopen the failure-log file, then re-read the configuration file; a file
    /// that does not validate is refused whole (every error logged) and the running configuration stays.
    /// Returns the errors of a refused file (empty when it was applied).
    @discardableResult
    func hangUp() async -> [ConfigurationIssue] {
        do {
            try failureLog.reopen()
        } catch {
            logger.error("SIGHUP: cannot reopen the failure log", metadata: ["gatehouse.error": "\(error)"])
        }
        guard let configurationPath else { return [] }
        do {
            let needRestart = await reload(try Configuration.load(fromFile: configurationPath))
            logger.notice("SIGHUP: configuration reloaded", metadata: [
                "gatehouse.needs_restart": "\(needRestart.isEmpty ? "nothing" : needRestart.joined(separator: ", "))",
            ])
            return []
        } catch {
            logger.error("SIGHUP: new configuration refused; the running one stays", metadata: [
                "gatehouse.errors": "\(error.issues.map(\.description).joined(separator: "; "))",
            ])
            return error.issues
        }
    }

    /// Applies a validated configuration to new requests: routes, identity headers, verification
    /// settings, providers and `[jwks]`, upstream timeout and token forwarding. Requests in flight
    /// finish on the old one. Providers whose settings did not change keep their keys, refresh
    /// schedule and cooldowns; new or changed ones get their keys fetched (bounded by `fetch_timeout`)
    /// before the swap, so their first requests do not meet a 503. Returns the sections that changed
    /// but need a restart (listeners, upstream address, logs, revocation store): they keep their running values.
    @discardableResult
    public func reload(_ new: Configuration) async -> [String] {
        let old = configuration
        var needRestart: [String] = []
        if new.listen != old.listen { needRestart.append("[listen]") }
        if new.admin != old.admin { needRestart.append("[admin]") }
        var port = new.extAuthz
        port?.forwardToken = old.extAuthz?.forwardToken  // applied below
        if port != old.extAuthz { needRestart.append("[ext_authz]") }
        if new.upstream.url != old.upstream.url || new.upstream.connectTimeout != old.upstream.connectTimeout
            || new.upstream.protocolVersion != old.upstream.protocolVersion || new.upstream.caFile != old.upstream.caFile
        {
            needRestart.append("[upstream] url/connect_timeout/protocol/ca_file")
        }
        if new.failureLog != old.failureLog { needRestart.append("[failure_log]") }
        if new.log != old.log { needRestart.append("[log]") }
        if new.revocation != old.revocation { needRestart.append("[revocation]") }
        if new.dpop.nonceSecret != old.dpop.nonceSecret || new.dpop.replayCacheSize != old.dpop.replayCacheSize {
            needRestart.append("[dpop] nonce_secret/replay_cache_size")
        }
        var applied = new
        applied.listen = old.listen
        applied.admin = old.admin
        applied.extAuthz = old.extAuthz
        if new.extAuthz != nil { applied.extAuthz?.forwardToken = new.extAuthz?.forwardToken }
        applied.upstream.url = old.upstream.url
        applied.upstream.connectTimeout = old.upstream.connectTimeout
        applied.upstream.protocolVersion = old.upstream.protocolVersion
        applied.upstream.caFile = old.upstream.caFile
        applied.failureLog = old.failureLog
        applied.log = old.log
        applied.revocation = old.revocation
        applied.dpop.nonceSecret = old.dpop.nonceSecret
        applied.dpop.replayCacheSize = old.dpop.replayCacheSize
        if applied.providers != old.providers || applied.jwks != old.jwks {
            await replaceKeyStore(for: applied, replacing: old)
        }
        activeConfiguration.withLockedValue { $0 = applied }
        servicesHandle.withLockedValue { $0 }?.replace(makeServices(applied))
        reloadCertificates(old.listen)
        if !needRestart.isEmpty {
            logger.warning("reload: these changes need a restart", metadata: ["gatehouse.sections": "\(needRestart.joined(separator: ", "))"])
        }
        return needRestart
    }

    /// A new key store for `new`'s providers: unchanged providers (same name, same settings) are
    /// carried over; the others are fetched once before the store goes into service.
    private func replaceKeyStore(for new: Configuration, replacing old: Configuration) async {
        let current = keyStore
        var carriedOver: [Int: (store: KeyStore, index: Int)] = [:]
        for (index, provider) in new.providers.enumerated() {
            if let oldIndex = old.providers.firstIndex(of: provider) { carriedOver[index] = (current, oldIndex) }
        }
        let replacement = Self.makeKeyStore(new, client: httpClient, metrics: metrics, logger: logger, carriedOver: carriedOver)
        // Introspection providers have no keys to fetch.
        let fresh = new.providers.indices.filter { carriedOver[$0] == nil && new.providers[$0].type != .introspection }
        await withTaskGroup(of: Void.self) { group in
            for index in fresh {
                group.addTask { await replacement.refresh(provider: index, on: self.group.next()).waitUnlessCancelled() }
            }
        }
        replacement.adopt(carriedOver)  // again: what the old store learnt during the fetches above
        keyStores.withLockedValue { $0 = replacement }
        current.retire()
        newKeyStore.yield(replacement)
        logger.notice("reload: providers updated", metadata: [
            "gatehouse.providers_kept": "\(carriedOver.keys.sorted().map { new.providers[$0].name }.joined(separator: ","))",
            "gatehouse.providers_fetched": "\(fresh.map { new.providers[$0].name }.joined(separator: ","))",
        ])
    }

    /// `Service`: serve until graceful shutdown (SIGTERM/SIGINT through the ServiceGroup), then drain.
    public func run() async throws {
        do {
            try await start()
        } catch {
            try? await httpClient.shutdown()
            throw error
        }
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.runBackgroundWork() }
                group.addTask { await self.reopenFailureLogOnHangup() }
            }
        }
        logger.info("gatehouse stopping: draining in-flight requests")
        await stop()
    }
}
