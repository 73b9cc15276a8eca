import ArgumentParser
import Gatehouse
import GatehouseConfig

struct CheckConfig: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config",
        abstract: "Validate a configuration file and what serve would need at start: exit 0 with a summary, or 1 listing every error.",
        discussion: """
            Besides the file itself, it checks what serve would fail on at start on this machine, without side effects: \
            secrets (env:NAME, *_file) resolvable, TLS certificates and keys readable and matching, CA bundles parseable, \
            the failure log, SQLite store and cache_dir writable. --syntax-only skips those (a file checked on another \
            machine than the one it runs on, in CI).
            """)

    @OptionGroup var options: ConfigOption
    @Flag(help: "Check the file only, not the files, secrets and directories it names (for CI on another machine).")
    var syntaxOnly = false

    func run() async throws {
        let configuration = try options.load()
        if !syntaxOnly {
            let problems = StartupPreflight.problems(configuration)
            guard problems.isEmpty else {
                printError("\(options.path): serve would not start: \(problems.count) problem(s):\n"
                    + problems.map(\.description).joined(separator: "\n"))
                throw ExitCode(1)
            }
        }
        print(configuration.summary)
    }
}
