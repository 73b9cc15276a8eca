import ArgumentParser
import Foundation
import Gatehouse
import GatehouseConfig
import GatehouseExchange

/// `gatehouse proxy-headers`: the blocks of a proxy's configuration that name Gatehouse's identity headers, for one
/// configuration; with `--check FILE`, whether a file holds them as printed (exit 1 naming each block that differs).
struct ProxyHeaders: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "proxy-headers",
        abstract: "Print the identity-header blocks of a proxy in front of Gatehouse (nginx, traefik, envoy, istio, envoy-gateway, gateway-api).",
        discussion: """
            Every header name Gatehouse may set for the configuration (its own, [headers], every [provider.headers], the \
            [assertion] header, and every preset's) must be stripped from a client's request and copied from Gatehouse's \
            answer only. Paste each block into your proxy's configuration (markers included); run again with --check after \
            changing [headers]. Without --config: the built-in names only.
            """)

    @Option(name: .long, help: "nginx, traefik, envoy, istio, envoy-gateway or gateway-api.")
    var proxy: String

    @Option(name: .long, help: "Gatehouse's configuration file (its [headers], [provider.headers] and [assertion] header).")
    var config: String?

    @Option(name: .long, help: "Check that this file holds every block as printed, instead of printing.")
    var check: String?

    func run() async throws {
        guard let kind = ProxyKind(rawValue: proxy) else {
            printError("unknown --proxy \(proxy): one of \(ProxyKind.allCases.map(\.rawValue).joined(separator: ", "))")
            throw ExitCode(2)
        }
        let loaded: Configuration?
        if let config { loaded = try ConfigOption.load(path: config) } else { loaded = nil }
        let snippets: [ProxySnippet]
        do {
            snippets = try ProxySnippets.snippets(for: kind, names: IdentityHeaderCatalog.names(for: loaded))
        } catch {
            printError("\(error)")
            throw ExitCode(1)
        }
        guard let check else {
            print(snippets.map { $0.text() }.joined(separator: "\n\n"))
            return
        }
        guard let file = try? String(contentsOfFile: check, encoding: .utf8) else {
            printError("cannot read \(check)")
            throw ExitCode(1)
        }
        let differing = snippets.filter { !$0.isContained(in: file) }
        for snippet in differing {
            printError("\(check): block \(snippet.block) \(snippet.found(in: file) == nil ? "is missing" : "differs"); it should read:\n\(snippet.text())")
        }
        if !differing.isEmpty { throw ExitCode(1) }
        print("\(check): every \(kind.rawValue) block matches")
    }
}
