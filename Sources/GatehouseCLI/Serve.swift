#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import Gatehouse
import GatehouseConfig
import Logging
import NIOPosix
import ServiceLifecycle
import UnixSignals
import GatehouseTelemetry

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the sidecar.")

    @OptionGroup var options: ConfigOption

    func run() async throws {
        let configuration = try options.load()
        OperationalLog.bootstrap(configuration.log)
        // A file-size limit (RLIMIT_FSIZE) reached by the failure log must fail that write (reported,
        // docs/reference.md §8), not kill the sidecar with SIGXFSZ.
        signal(SIGXFSZ, SIG_IGN)
        let logger = Logger(label: "gatehouse")
        let files = OpenFilesLimit.raiseToHard()
        logger.info("open files limit", metadata: [
            "gatehouse.limit": "\(files.after)", "gatehouse.raised_from": "\(files.before)",
        ])
        let gatehouse: Gatehouse
        do {
            let group = MultiThreadedEventLoopGroup(numberOfThreads: AvailableCores.count())
            gatehouse = try Gatehouse(
                configuration: configuration, eventLoopGroup: group, logger: logger, configurationPath: options.path)
        } catch {
            logger.critical("cannot start", metadata: ["gatehouse.error": "\(error)"])
            throw ExitCode(1)
        }
        let group = ServiceGroup(
            services: [gatehouse], gracefulShutdownSignals: [.sigterm, .sigint], cancellationSignals: [], logger: logger)
        try await group.run()
    }
}
