import NIOCore
import NIOHTTP1
import Logging
import NIOPosix
import GatehouseTokens
import GatehouseTelemetry
import GatehouseAuth
import GatehouseExchange
import GatehouseProxy
import GatehouseVocabulary

enum AdminServer {
    static func bind(host: String, port: Int, group: any EventLoopGroup, keyStatus: @escaping @Sendable () -> [ProviderKeyStatus], revocations: RevocationService, dpopReplay: DPoPReplayCache, metrics: GatehouseMetrics, assertion: @escaping @Sendable () -> AssertionSigner?, logger: Logger) async throws -> any Channel {
        try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ListenerAcceptBackoff(listener: "admin", metrics: metrics, logger: logger))
                }
            }
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(AdminHandler(
                        keyStatus: keyStatus, revocations: revocations, dpopReplay: dpopReplay, metrics: metrics, assertion: assertion))
                }
            }
            .bind(host: host, port: port)
            .get()
    }
}
