import ArgumentParser
import Foundation
import Gatehouse
import Logging
import GatehouseSyntax
import GatehouseTokens
import GatehouseAuth
import GatehouseVocabulary

struct VerifyToken: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify-token",
        abstract: "Verify one token exactly as serve would (fetching keys): print the provider and claims, or the failure reason.")

    @OptionGroup var options: ConfigOption
    @Argument(help: "The token; read from standard input when absent.") var token: String?
    @Option(help: "A DPoP proof (RFC 9449) presented with the token: judged for --method and --url.") var dpop: String?
    @Option(help: "The request method the proof is for.") var method = "GET"
    @Option(help: "The URL the proof is for (needed with --dpop).") var url: String?

    func validate() throws {
        if dpop != nil, url == nil { throw ValidationError("--dpop needs --url (the request the proof is for)") }
        if dpop == nil, url != nil { throw ValidationError("--url is only used with --dpop") }
    }

    func run() async throws {
        let configuration = try options.load()
        var logger = Logger(label: "gatehouse")
        logger.logLevel = .error
        let presented = token ?? String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
        let proof = dpop.map { TokenInspection.Proof(proof: $0, method: method, url: url ?? "") }
        switch await TokenInspection.verify(presented, proof: proof, configuration: configuration, logger: logger) {
        case .success(let identity):
            print("valid: provider \(identity.providerName), subject \(identity.subject ?? "(none)")")
            print(JSONValue.object(identity.claims).compactJSON)
        case .failure(let failure):
            print("invalid: \(failure.reason.rawValue): \(TokenInspection.explanation(failure))")
            throw ExitCode(1)
        }
    }
}
