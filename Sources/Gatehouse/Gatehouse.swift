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
    public let configuration: Configuration
    public let metrics: GatehouseMetrics
    let keyStore: KeyStore
    let revocations = RevocationList()
    private let failureLog: FailureLog
    private let httpClient: HTTPClient
    private let group: any EventLoopGroup
    private let logger: Logger
    private let running = NIOLockedValueBox<Running?>(nil)

    private struct Running {
        var proxy: any Channel
        var admin: any Channel
        var quiesce: ConnectionDrainer
        var pools: [NIOLoopBound<UpstreamConnectionPool>]
    }

    /// - Parameter failureLog: overrides `[failure_log] path` (tests, embedding).
    public init(
        configuration: Configuration,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger,
        failureLog destination: FailureLogDestination? = nil
    ) throws {
        self.configuration = configuration
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
            pseudonymKey: settings.pseudonymize ? key : nil)
        var clientConfiguration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        clientConfiguration.timeout = .init(
            connect: TimeAmount(configuration.jwks.fetchTimeout), read: TimeAmount(configuration.jwks.fetchTimeout))
        self.httpClient = HTTPClient(eventLoopGroup: eventLoopGroup, configuration: clientConfiguration, backgroundActivityLogger: logger)
        let providers = configuration.providers.map { Provider(settings: $0, globalHeaders: configuration.headers.mappings) }
        self.keyStore = KeyStore(
            providers: providers,
            fetcher: JWKSFetcher(client: httpClient, timeout: configuration.jwks.fetchTimeout),
            settings: configuration.jwks,
            logger: logger,
            onFetch: { provider, result in
                switch result {
                case .success(let count): metrics.jwksFetch(provider: provider, succeeded: true, keyCount: count)
                case .failure: metrics.jwksFetch(provider: provider, succeeded: false, keyCount: nil)
                }
            })
    }

    /// The bound client-port address (after `start()`).
    public var proxyAddress: SocketAddress? { running.withLockedValue { $0?.proxy.localAddress } }
    /// The bound admin-port address (after `start()`).
    public var adminAddress: SocketAddress? { running.withLockedValue { $0?.admin.localAddress } }

    /// Binds both listeners. Key fetching starts with `runBackgroundWork()`.
    public func start() async throws {
        let configuration = self.configuration
        let providers = keyStore.providers
        let verifier = TokenVerifier(
            keyStore: keyStore, verification: configuration.verification, tokenMaxBytes: configuration.listen.tokenMaxBytes,
            onCacheLookup: { [metrics] hit in metrics.verifyCache(hit: hit) })
        let routes = RouteTable(configuration.routes)
        let allMappings = providers.flatMap(\.headerMappings) + configuration.headers.mappings
        let services = ProxyServices(
            gatekeeper: Gatekeeper(
                routes: routes, verifier: verifier, verification: configuration.verification, userinfo: userinfoEnricher(),
                revocations: revocations),
            routes: routes,
            upstreamHead: UpstreamRequestHead(
                identityHeaderNames: IdentityHeaderNames(mappings: allMappings),
                headerMappings: providers.map(\.headerMappings),
                forwardClaimsJSON: configuration.headers.forwardClaimsJSON,
                forwardToken: configuration.upstream.forwardToken,
                tokenHeaderName: configuration.verification.tokenHeader),
            failureLog: failureLog,
            revocations: revocations,
            metrics: metrics,
            responseTimeout: TimeAmount(configuration.upstream.timeout),
            verification: configuration.verification,
            scheme: "http",
            retryAfterSeconds: 5,
            logger: logger)
        let upstreamURL = configuration.upstream.url
        let isTLS = upstreamURL.scheme == "https"
        let target = UpstreamConnectionPool.Target(
            host: upstreamURL.host ?? "127.0.0.1",
            port: upstreamURL.port ?? (isTLS ? 443 : 80),
            connectTimeout: TimeAmount(configuration.upstream.connectTimeout),
            tls: isTLS ? try NIOSSLContext(configuration: .makeClientConfiguration()) : nil)
        let server = ProxyServer(services: services, upstream: target, maxHeaderBytes: configuration.listen.maxHeaderBytes)
        let listen = configuration.listen.address
        let (proxy, quiesce, pools) = try await server.bind(host: listen.host, port: listen.port, group: group)
        let admin: any Channel
        do {
            admin = try await AdminServer.bind(
                host: configuration.admin.address.host, port: configuration.admin.address.port, group: group,
                keyStore: keyStore, metrics: metrics)
        } catch {
            try? await proxy.close()
            throw error
        }
        running.withLockedValue { $0 = Running(proxy: proxy, admin: admin, quiesce: quiesce, pools: pools) }
        logger.info("gatehouse listening", metadata: [
            "gatehouse.listen": "\(proxy.localAddress.map { "\($0)" } ?? "?")",
            "gatehouse.admin": "\(admin.localAddress.map { "\($0)" } ?? "?")",
            "gatehouse.upstream": "\(upstreamURL)",
        ])
    }

    /// Cognito userinfo enrichment when any provider has `userinfo = true`.
    private func userinfoEnricher() -> UserinfoEnricher? {
        let endpoints = UserinfoEnricher.endpoints(for: configuration.providers)
        guard !endpoints.isEmpty else { return nil }
        return UserinfoEnricher(
            client: httpClient, endpoints: endpoints, timeout: configuration.jwks.fetchTimeout,
            capacity: max(configuration.verification.cacheSize, 1000), logger: logger)
    }

    /// Fetches and refreshes keys, and writes the failure log's once-a-second summaries, until cancelled.
    public func runBackgroundWork() async {
        let refresher = KeyRefresher(keyStore: keyStore, eventLoopGroup: group, minRefresh: configuration.jwks.minRefresh)
        let failureLog = self.failureLog
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await refresher.run() }
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
        let drained = group.next().makePromise(of: Void.self)
        running.quiesce.initiateShutdown(promise: drained)
        let timeout = TimeAmount(drainTimeout ?? configuration.listen.drainTimeout)
        let deadline = group.next().scheduleTask(in: timeout) { drained.succeed() }
        try? await drained.futureResult.get()
        deadline.cancel()
        running.quiesce.closeRemaining()
        try? await running.admin.close()
        for pool in running.pools {
            try? await pool.eventLoop.submit { pool.value.closeAll() }.get()
        }
        try? await httpClient.shutdown()
    }

    /// SIGHUP: reopen the failure-log file (logrotate moved it). Re-reading the configuration on
    /// SIGHUP is not built yet: the operational log says so, and a restart applies a new one.
    private func reopenFailureLogOnHangup() async {
        for await _ in await UnixSignalsSequence(trapping: .sighup).cancelOnGracefulShutdown() {
            do {
                try failureLog.reopen()
                logger.notice("SIGHUP: failure log reopened; configuration changes need a restart")
            } catch {
                logger.error("SIGHUP: cannot reopen the failure log", metadata: ["gatehouse.error": "\(error)"])
            }
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
