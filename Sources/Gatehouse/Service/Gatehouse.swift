import AsyncHTTPClient
import Foundation
public import GatehouseVocabulary
public import Logging
public import NIOCore
import NIOConcurrencyHelpers
import NIOHTTP1
public import NIOPosix
import NIOSSL
public import ServiceLifecycle
import UnixSignals
public import GatehouseConfig
public import GatehouseTelemetry
import GatehouseAuth
import GatehouseExchange
import GatehouseProxy
import GatehouseExtAuthz

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
    let keyStores: NIOLockedValueBox<KeyStore>
    /// Each store, as it comes into service: `runBackgroundWork` starts its refresher.
    let keyStoreGenerations: AsyncStream<KeyStore>
    let newKeyStore: AsyncStream<KeyStore>.Continuation
    let revocations: RevocationService
    /// DPoP proofs accepted here, kept across reloads (`[dpop] replay_cache_size` needs a restart).
    let dpopReplay: DPoPReplayCache
    /// `[dpop] nonce_secret`, or random bytes of this process: replicas share nonces only with a configured secret.
    let dpopNonceSecret: [UInt8]
    /// The services new requests use (after `start()`); a reload swaps them, requests in flight keep theirs.
    let servicesHandle = NIOLockedValueBox<ServicesHandle?>(nil)
    /// What the next request is judged with (after `start()`); the request core's tests drive it directly.
    var currentServices: ProxyServices? { servicesHandle.withLockedValue { $0 }?.services }
    let activeConfiguration: NIOLockedValueBox<Configuration>
    let configurationPath: String?
    /// The client port's TLS context: new connections take the current one, so a SIGHUP can
    /// swap in renewed certificates without dropping any connection.
    let serverTLS = NIOLockedValueBox<NIOSSLContext?>(nil)
    let failureLog: FailureLog
    let httpClient: HTTPClient
    /// `[tracing]` (restart to change): the spans of every request go through it to the collector.
    let tracer: Tracer?
    let group: any EventLoopGroup
    let logger: Logger
    /// The time of day requests are decided at (`WallClock.system`, or a test's).
    let wallClock: WallClock
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
    ///   - wallClock: the time of day requests are decided at (tests move it).
    public init(
        configuration: Configuration,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger,
        failureLog destination: FailureLogDestination? = nil,
        configurationPath: String? = nil,
        wallClock: WallClock = .system
    ) throws {
        self.wallClock = wallClock
        self.activeConfiguration = NIOLockedValueBox(configuration)
        self.configurationPath = configurationPath
        self.group = eventLoopGroup
        self.logger = logger
        let metrics = GatehouseMetrics()
        metrics.configurationLoaded(at: Date().timeIntervalSince1970)
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
        let client = httpClient
        self.tracer = configuration.tracing.map {
            Tracer(settings: $0, exporter: SpanExporter(settings: $0, client: client, metrics: metrics, logger: logger),
                   upstream: configuration.servesClientPort ? configuration.upstream.url : nil)
        }
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
                assertion: { [servicesHandle] in servicesHandle.withLockedValue { $0 }?.services.exchange.upstreamHead.assertion }, logger: logger)
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
            if let exporter = self.tracer?.exporter { group.addTask { await exporter.run() } }
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
        // The spans of the requests just drained, before the HTTP client goes (the background work was cancelled): one
        // `export_timeout` at most, whatever the queue holds, so a dead collector never holds the stop up.
        if let exporter = tracer?.exporter {
            await exporter.exportQueued(until: .now() + TimeAmount(exporter.settings.exportTimeout))
        }
        try? await httpClient.shutdown()
    }

    /// systemd's `Type=notify`: `READY=1` once `/readyz` would answer 200 (every provider's keys usable, the
    /// revocation store read), checked every 100 ms; until then systemd holds the units ordered after this one.
    private func notifyReadyOnceReady(_ notifier: SystemdNotifier) async {
        while !Task.isCancelled {
            let ready = AdminHandler.isReady(keyStores.withLockedValue { $0 }.status(), store: revocations.status)
            if ready {
                notifier.send("READY=1\nSTATUS=serving")
                return
            }
            guard (try? await Task.sleep(for: .milliseconds(100))) != nil else { return }
        }
    }

    /// `Service`: serve until graceful shutdown (SIGTERM/SIGINT through the ServiceGroup), then drain.
    public func run() async throws {
        do {
            try await start()
        } catch {
            try? await httpClient.shutdown()
            throw error
        }
        let notifier = SystemdNotifier()
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.runBackgroundWork() }
                group.addTask { await self.reopenFailureLogOnHangup(notifier: notifier) }
                if notifier.isActive { group.addTask { await self.notifyReadyOnceReady(notifier) } }
            }
        }
        logger.info("gatehouse stopping: draining in-flight requests")
        notifier.send("STOPPING=1")
        await stop()
    }
}
