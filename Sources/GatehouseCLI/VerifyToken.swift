import ArgumentParser
import Foundation
import Gatehouse
import Logging

struct VerifyToken: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify-token",
        abstract: "Verify one token exactly as serve would (fetching keys): print the provider and claims, or the failure reason.")

    @OptionGroup var options: ConfigOption
    @Argument(help: "The token; read from standard input when absent.") var token: String?

    func run() async throws {
        let configuration = try options.load()
        var logger = Logger(label: "gatehouse")
        logger.logLevel = .error
        let presented = token ?? String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
        switch await TokenInspection.verify(presented, configuration: configuration, logger: logger) {
        case .success(let identity):
            print("valid: provider \(identity.providerName), subject \(identity.subject ?? "(none)")")
            print(JSONValue.object(identity.claims).compactJSON)
        case .failure(let failure):
            print("invalid: \(failure.reason.rawValue): \(TokenInspection.explanation(failure))")
            throw ExitCode(1)
        }
    }
}
