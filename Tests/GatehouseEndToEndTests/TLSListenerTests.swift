import AsyncHTTPClient
import Foundation
import Logging
@testable import Gatehouse
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Testing
import GatehouseConfig
import GatehouseTelemetry
import GatehouseExtAuthz

/// `[listen] tls_cert` / `tls_key`: the client port speaks TLS, with a certificate made for the test.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct TLSListenerTests {
    /// A self-signed certificate for 127.0.0.1 from the openssl command line (Debian's, on every machine here).
    static func makeCertificate(in directory: String) throws -> (certificate: String, key: String) {
        let certificate = directory + "/tls.crt"
        let key = directory + "/tls.key"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", certificate,
        ]
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        return (certificate, key)
    }

    /// One request over a new connection that trusts only `certificates`.
    static func status(port: Int, trusting certificates: [NIOSSLCertificate], timeout: TimeAmount = .seconds(5)) async throws -> UInt {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(certificates)
        let client = HTTPClient(
            eventLoopGroup: MultiThreadedEventLoopGroup.singleton,
            configuration: HTTPClient.Configuration(tlsConfiguration: tls, redirectConfiguration: .disallow))
        var request = HTTPClientRequest(url: "https://127.0.0.1:\(port)/v1/orders")
        request.headers.add(name: "Authorization", value: "Bearer \(TestSigner.ec.token(claims: Claims.valid()))")
        let result: Result<UInt, any Error>
        do {
            let response = try await client.execute(request, timeout: timeout)
            _ = try await response.body.collect(upTo: 1 << 20)
            result = .success(response.status.code)
        } catch {
            result = .failure(error)
        }
        try await client.shutdown()
        return try result.get()
    }

    @Test func clientPortServesTLSAndTellsTheUpstream() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-tls-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let files = try Self.makeCertificate(in: directory)
        try await TestEnvironment.run(configure: { configuration, _ in
            configuration.listen.tlsCertificatePath = files.certificate
            configuration.listen.tlsKeyPath = files.key
        }) { (env: TestEnvironment) async throws in
            let first = try NIOSSLCertificate.fromPEMFile(files.certificate)
            #expect(try await Self.status(port: env.port, trusting: first) == 200)
            #expect(env.upstream.last?.value("x-forwarded-proto") == "https")
            // Plain HTTP on the TLS port is not served.
            #expect(RawHTTP.statuses(RawHTTP.exchange(port: env.port, "GET / HTTP/1.1\r\nHost: a\r\n\r\n", timeout: .seconds(1))).isEmpty)
            // Renewed in place, then reloaded (SIGHUP): new connections present the new certificate.
            _ = try Self.makeCertificate(in: directory)
            let renewed = try NIOSSLCertificate.fromPEMFile(files.certificate)
            await env.gatehouse.reload(env.gatehouse.configuration)
            #expect(try await Self.status(port: env.port, trusting: renewed) == 200)
            #expect((try? await Self.status(port: env.port, trusting: first, timeout: .seconds(1))) == nil)
        }
    }

    @Test func httpsUpstreamIsVerifiedAgainstTheConfiguredCABundle() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-tls-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let files = try Self.makeCertificate(in: directory)
        let serverTLS = try NIOSSLContext(configuration: .makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(files.certificate).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: files.key, format: .pem))))
        let token = TestSigner.ec.token(claims: Claims.valid())
        // Trusting the upstream's own certificate: forwarded over TLS.
        try await TestEnvironment.run(upstreamTLS: serverTLS, configure: { configuration, _ in
            configuration.upstream.caFile = files.certificate
        }) { (env: TestEnvironment) async throws in
            let response = try await env.request("/v1/orders", token: token)
            #expect(response.status == 200)
            #expect(env.upstream.last?.value("x-auth-subject") == "user-1")
        }
        // The system trust store does not know a self-signed certificate: 502, nothing forwarded.
        try await TestEnvironment.run(upstreamTLS: serverTLS) { (env: TestEnvironment) async throws in
            #expect(try await env.request("/v1/orders", token: token).status == 502)
            #expect(env.upstream.traffic.heads == 0, "the handshake fails before any request is sent")
        }
    }

    @Test func anUnreadableCABundleStopsTheStartWithTheKeyNamed() async throws {
        var configuration = Configuration(
            upstream: UpstreamSettings(url: URL(string: "https://127.0.0.1:1")!), providers: [ProviderSettings(name: "p", type: .jwks)])
        configuration.listen.address = SocketAddressSetting(host: "127.0.0.1", port: 0)
        configuration.admin.address = SocketAddressSetting(host: "127.0.0.1", port: 0)
        configuration.upstream.caFile = "/nonexistent/ca.pem"
        let gatehouse = try Gatehouse(configuration: configuration, logger: .init(label: "test"), failureLog: .custom { _ in })
        await #expect { try await gatehouse.start() } throws: { error in
            "\(error)".contains("[upstream] ca_file /nonexistent/ca.pem")
        }
        await gatehouse.stop()
    }
}
