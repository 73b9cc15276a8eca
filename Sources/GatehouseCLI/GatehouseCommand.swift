import ArgumentParser
import Gatehouse

@main
struct GatehouseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gatehouse",
        abstract: "An authentication sidecar: verifies bearer JWTs and forwards to an unmodified upstream.",
        version: GatehouseVersion.description,
        subcommands: [Serve.self, CheckConfig.self, VerifyToken.self, ProxyHeaders.self, Health.self, Demo.self, BenchVerify.self]
    )
}

/// `--config FILE`, defaulting to `$GATEHOUSE_CONFIG`, then `gatehouse.toml`.
struct ConfigOption: ParsableArguments {
    @Option(name: .long, help: "Configuration file (default: $GATEHOUSE_CONFIG, then gatehouse.toml).")
    var config: String?

    var path: String {
        config ?? ProcessInfo.processInfo.environment["GATEHOUSE_CONFIG"] ?? "gatehouse.toml"
    }

    /// Loads and validates; on failure prints every issue to stderr and exits 1.
    func load() throws -> Configuration {
        try Self.load(path: path)
    }

    static func load(path: String) throws -> Configuration {
        do {
            return try Configuration.load(fromFile: path)
        } catch {
            printError("\(path): configuration has \(error.issues.count) error(s):\n\(error)")
            throw ExitCode(1)
        }
    }
}

import Foundation
import GatehouseConfig
import GatehouseTelemetry

func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}
