import ArgumentParser
import Foundation
import Gatehouse
import GatehouseDemo
import Logging
import NIOPosix
import ServiceLifecycle
import UnixSignals
import GatehouseSyntax
import GatehouseConfig
import GatehouseTelemetry
import GatehouseAuth

struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Zero-setup demo: a local issuer, an echo upstream and the sidecar on loopback.")

    @Option(help: "Client port of the sidecar.") var port = 8080
    @Option(help: "Admin port (/healthz /readyz /metrics).") var adminPort = 9901

    func run() async throws {
        OperationalLog.bootstrap(LogSettings())
        let logger = Logger(label: "gatehouse.demo")
        let group = MultiThreadedEventLoopGroup.singleton
        let issuer = try await DemoIssuer(group: group)
        let upstream = try await EchoUpstream(group: group)

        var provider = ProviderSettings(name: "demo", type: .jwks)
        provider.issuer = issuer.issuer
        provider.jwksURI = issuer.jwksURL
        provider.audiences = [issuer.audience]
        var configuration = Configuration(
            upstream: UpstreamSettings(url: URL(string: "http://127.0.0.1:\(upstream.port)")!),  // safe: loopback literal
            providers: [provider])
        configuration.listen.address = SocketAddressSetting(host: "127.0.0.1", port: port)
        configuration.admin.address = SocketAddressSetting(host: "127.0.0.1", port: adminPort)
        var publicRoute = RouteSettings(match: .prefix("/public"))
        publicRoute.auth = .public
        var optionalRoute = RouteSettings(match: .prefix("/guest"))
        optionalRoute.auth = .optional
        var adminRoute = RouteSettings(match: .prefix("/admin"))
        adminRoute.scopes = ["admin"]
        configuration.routes = [publicRoute, optionalRoute, adminRoute]
        // The signed identity assertion, with a key made now: the echo shows it, the JWKS publishes it.
        let assertionKey = AssertionKey.generated()
        var assertion = AssertionSettings(issuer: "https://gatehouse.demo", audience: "http://127.0.0.1:\(upstream.port)", signingKey: assertionKey)
        assertion.claims = ["email"]
        configuration.assertion = assertion

        let gatehouse = try Gatehouse(configuration: configuration, logger: logger)
        let token = try issuer.mint(subject: "demo-user-42", extraClaims: [
            "email": .string("ada@example.com"), "email_verified": .bool(true), "name": .string("Ada Lovelace"),
            "scope": .string("read write"),
        ])
        let expired = try issuer.mint(subject: "demo-user-42", lifetime: .seconds(-3600))
        // Unbuffered, like the failure-log lines that follow it on stdout.
        FileHandle.standardOutput.write(Data(Self.banner(port: port, adminPort: adminPort, token: token, expired: expired, assertionKeyID: assertionKey.keyID).utf8))
        let group2 = ServiceGroup(
            services: [gatehouse], gracefulShutdownSignals: [.sigterm, .sigint], cancellationSignals: [], logger: logger)
        do {
            try await group2.run()
        } catch {
            printError("gatehouse demo: \(error)\n(is port \(port) or \(adminPort) in use? try --port 18080 --admin-port 19901)")
            await issuer.close()
            await upstream.close()
            throw ExitCode(1)
        }
        await issuer.close()
        await upstream.close()
    }

    static func banner(port: Int, adminPort: Int, token: String, expired: String, assertionKeyID: String) -> String {
        let base = "http://127.0.0.1:\(port)"
        return """
            Gatehouse demo is running: a demo issuer (ES256 JWKS), an echo upstream and the sidecar.

              TOKEN=\(token)

            Without a token, a protected path is refused (401, and one failure-log line below):
              curl -i \(base)/v1/orders

            With the token, the upstream echoes what it received, identity headers included:
              curl -i -H "Authorization: Bearer $TOKEN" \(base)/v1/orders

            A forged identity header is stripped, even on a public route:
              curl -i -H "X-Auth-Subject: admin" \(base)/public/hello

            An expired token (401 expired), and a route that needs a scope the token lacks (403):
              curl -i -H "Authorization: Bearer \(expired)" \(base)/v1/orders
              curl -i -H "Authorization: Bearer $TOKEN" \(base)/admin

            Each forwarded request carries X-Gatehouse-Assertion, a JWT Gatehouse signs (ES256, with a key made at
            start, kid \(assertionKeyID)) so the upstream can check who sent it; its keys:
              curl \(base)/.gatehouse/jwks.json

            Admin port: curl \("http://127.0.0.1:\(adminPort)")/readyz   ·   curl \("http://127.0.0.1:\(adminPort)")/metrics
            Failure-log lines (JSON) appear below. Ctrl-C stops everything.

            """
    }
}
