@testable import Gatehouse
import Logging
import GatehouseTelemetry
import GatehouseConfig
import GatehouseExtAuthz

extension TestEnvironment {
    /// A second Gatehouse with this one's configuration (its own ports, same upstream, JWKS and
    /// store), started, ready, and running its background work during `body`. `onAnyPort`: its client port any free
    /// one, where this one's was fixed.
    func withReplica<T: Sendable>(onAnyPort: Bool = false, _ body: (Gatehouse) async throws -> T) async throws -> T {
        var logger = Logger(label: "gatehouse.test.replica")
        logger.logLevel = .critical
        var configuration = gatehouse.configuration
        if onAnyPort { configuration.listen.address.port = 0 }
        let replica = try Gatehouse(configuration: configuration, logger: logger, failureLog: .custom { _ in })
        try await replica.start()
        let outcome: Result<T, any Error> = await withTaskGroup(of: Void.self) { group in
            group.addTask { await replica.runBackgroundWork() }
            defer { group.cancelAll() }
            do {
                try await Self.waitUntilReady(replica)
                return .success(try await body(replica))
            } catch {
                return .failure(error)
            }
        }
        await replica.stop(drainTimeout: .seconds(1))
        return try outcome.get()
    }
}
