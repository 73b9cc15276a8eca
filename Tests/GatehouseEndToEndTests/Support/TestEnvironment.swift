import AsyncHTTPClient
import Foundation
@testable import Gatehouse
import GatehouseTokens
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Testing
import GatehouseSyntax
import GatehouseConfig
import GatehouseTelemetry
import GatehouseAuth
import GatehouseExtAuthz
import GatehouseVocabulary

/// A real Gatehouse on loopback port 0, in front of a real upstream, verifying against a real
/// JWKS server, with its failure log captured line by line.
struct TestEnvironment: Sendable {
    let jwks: TestJWKSServer
    let upstream: TestUpstream
    let gatehouse: Gatehouse
    let client: HTTPClient
    private let lines: NIOLockedValueBox<[String]>
    private let operationalRecords: NIOLockedValueBox<[String]>

    var port: Int { gatehouse.proxyAddress?.port ?? 0 }
    var adminPort: Int { gatehouse.adminAddress?.port ?? 0 }
    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// The failure log so far, one parsed JSON object per line. A line that is not one JSON object
    /// (a torn or corrupted line) is an issue of the test that reads it, never silently dropped.
    var failureLog: [[String: JSONValue]] {
        lines.withLockedValue { $0 }.compactMap { line in
            guard let object = try? StrictJSON.parse(Array(line.utf8)).objectValue else {
                Issue.record("a failure-log line that is not one JSON object: \(line)")
                return nil
            }
            return object
        }
    }
    var failureLogLines: [String] { lines.withLockedValue { $0 } }
    /// Forgets the failure-log lines kept so far (a long run's memory is then Gatehouse's, not the log's).
    func forgetFailureLog() { lines.withLockedValue { $0 = [] } }
    /// The operational log (standard error in production) at warning and above, one record a line.
    var operationalLog: [String] { operationalRecords.withLockedValue { $0 } }

    static func run<T: Sendable>(
        signers: [TestSigner] = [.rsa, .ec, .ed],
        waitForKeys: Bool = true,
        configurationPath: String? = nil,
        upstreamTLS: NIOSSLContext? = nil,
        upstreamHTTP2: Bool = false,
        wallClock: WallClock = .system,
        configure: (inout Configuration, _ jwks: TestJWKSServer) -> Void = { _, _ in },
        _ body: (TestEnvironment) async throws -> T
    ) async throws -> T {
        let jwks = try await TestJWKSServer(jwks: TestSigner.jwks(signers))
        let upstream = try await TestUpstream(tls: upstreamTLS, http2: upstreamHTTP2)
        var provider = ProviderSettings(name: "test", type: .jwks)
        provider.issuer = Claims.issuer
        provider.jwksURI = jwks.jwksURL
        provider.audiences = [Claims.audience]
        var configuration = Configuration(
            upstream: UpstreamSettings(url: URL(string: "\(upstreamTLS == nil ? "http" : "https")://127.0.0.1:\(upstream.port)")!),
            providers: [provider])
        configuration.listen.address = SocketAddressSetting(host: "127.0.0.1", port: 0)
        configuration.admin.address = SocketAddressSetting(host: "127.0.0.1", port: 0)
        configuration.upstream.timeout = .milliseconds(800)
        if upstreamHTTP2 { configuration.upstream.protocolVersion = .http2 }
        configuration.jwks.fetchTimeout = .seconds(1)
        configure(&configuration, jwks)
        let lines = NIOLockedValueBox<[String]>([])
        let operationalRecords = NIOLockedValueBox<[String]>([])
        let logger = Logger(label: "gatehouse.test") { _ in TestLogHandler(records: operationalRecords) }
        let gatehouse = try Gatehouse(
            configuration: configuration, logger: logger, failureLog: .custom { line in lines.withLockedValue { $0.append(line) } },
            configurationPath: configurationPath, wallClock: wallClock)
        var clientConfiguration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        clientConfiguration.timeout = .init(connect: .seconds(5), read: .seconds(10))
        let client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: clientConfiguration)
        let environment = TestEnvironment(
            jwks: jwks, upstream: upstream, gatehouse: gatehouse, client: client, lines: lines, operationalRecords: operationalRecords)
        try await gatehouse.start()
        let outcome: Result<T, any Error> = await withTaskGroup(of: Void.self) { group in
            group.addTask { await gatehouse.runBackgroundWork() }
            defer { group.cancelAll() }
            do {
                if waitForKeys { try await environment.waitUntilReady() }
                return .success(try await body(environment))
            } catch {
                return .failure(error)
            }
        }
        await gatehouse.stop(drainTimeout: .seconds(1))
        try? await client.shutdown()
        await jwks.close()
        await upstream.close()
        return try outcome.get()
    }

    /// Waits until every provider has usable keys and the revocation store has been read (at most 10 s).
    func waitUntilReady() async throws {
        try await Self.waitUntilReady(gatehouse)
    }

    static func waitUntilReady(_ gatehouse: Gatehouse) async throws {
        for _ in 0..<1000 {
            if gatehouse.keyStore.status().allSatisfy(\.usable), gatehouse.revocations.status.loadedOnce { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("gatehouse never became ready")
    }

    struct Response: Sendable {
        var status: Int
        var headers: HTTPHeaders
        var body: String
        var json: [String: JSONValue]? { try? StrictJSON.parse(Array(body.utf8)).objectValue }
    }

    /// A real HTTP request through the sidecar (redirects are not followed).
    func request(
        _ path: String, method: HTTPMethod = .GET, token: String? = nil, headers: [(String, String)] = [], body: String? = nil,
        port: Int? = nil
    ) async throws -> Response {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port ?? self.port)\(path)")
        request.method = method
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(string: body)) }
        let response = try await client.execute(request, timeout: .seconds(10))
        let bytes = try await response.body.collect(upTo: 16 << 20)
        return Response(status: Int(response.status.code), headers: response.headers, body: String(buffer: bytes))
    }

    func admin(_ path: String) async throws -> Response {
        try await request(path, port: adminPort)
    }

    /// docs/security.md §1 "nothing reaches the upstream": no connection, no byte, no request head
    /// beyond `since` (the upstream's traffic before the refused request), judged once everything sent to the
    /// upstream before this call has been read (`TestUpstream.settledTraffic()`, a positive marker).
    func expectNothingReachedUpstream(
        since: TestUpstream.Traffic = TestUpstream.Traffic(), _ comment: String = "", sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let now = try upstream.settledTraffic()
        #expect(now == since, "the upstream was reached (\(now), before: \(since)) \(comment)", sourceLocation: sourceLocation)
    }
}

/// A wall clock a test moves forward (a token's `exp` passed without waiting for it): the system's time plus the
/// seconds added so far.
final class MovableClock: Sendable {
    private let offset = NIOLockedValueBox<TimeInterval>(0)

    var wallClock: WallClock {
        WallClock { [offset] in Date().addingTimeInterval(offset.withLockedValue { $0 }) }
    }

    func advance(by seconds: TimeInterval) {
        offset.withLockedValue { $0 += seconds }
    }
}
