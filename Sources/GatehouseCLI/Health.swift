import ArgumentParser
import Gatehouse
import GatehouseConfig

/// `gatehouse health`: exit 0 when the running Gatehouse's admin port answers `/healthz` (or `/readyz` with
/// `--ready`) with 200, else 1: the image's HEALTHCHECK, which has no shell or curl to run.
struct Health: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "health",
        abstract: "Ask the running Gatehouse's admin port for /healthz (or /readyz): exit 0 on 200, else 1.")

    @OptionGroup var options: ConfigOption
    @Flag(help: "Ask /readyz (keys loaded, store read) instead of /healthz (the process answers).") var ready = false
    @Option(help: "Seconds to wait for the answer.") var timeout = 2

    func run() async throws {
        let configuration = try options.load()
        let url = HealthProbe.url(admin: configuration.admin.address, path: ready ? "/readyz" : "/healthz")
        switch await HealthProbe.ask(url, timeout: .seconds(timeout)) {
        case .answered(status: 200):
            print("\(url): 200")
        case .answered(let status):
            printError("\(url): \(status)")
            throw ExitCode(1)
        case .unreachable(let why):
            printError("\(url): no answer: \(why)")
            throw ExitCode(1)
        }
    }
}
