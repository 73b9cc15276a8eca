import ArgumentParser
import Gatehouse

struct CheckConfig: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config", abstract: "Validate a configuration file: exit 0 with a summary, or 1 listing every error.")

    @OptionGroup var options: ConfigOption

    func run() async throws {
        let configuration = try options.load()
        print(configuration.summary)
    }
}
