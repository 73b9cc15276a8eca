import Crypto
import Foundation
@testable import Gatehouse
import NIOCore
import NIOHTTP1
import NIOSSL
import Testing
import GatehouseSyntax
import GatehouseConfig

/// Certificate-bound access tokens (RFC 8705 §3): a token with `cnf.x5t#S256` passes only over a
/// connection whose TLS client certificate has that thumbprint, shown with real certificates from
/// openssl and a real client (`curl --cert`), over HTTP/1.1 and HTTP/2; and behind a proxy that
/// terminated mTLS, from its header, believed only from the trusted addresses.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct CertificateBoundTokenTests {
    /// A client CA, two client certificates it signed, and the server's certificate.
    struct Files {
        let directory: String
        let server: (certificate: String, key: String)
        let ca: String
        let client: (certificate: String, key: String)
        let otherClient: (certificate: String, key: String)

        init() throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-mtls-\(UUID())").path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            server = try TLSListenerTests.makeCertificate(in: directory)
            ca = directory + "/ca.crt"
            try Self.openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
                              "-subj", "/CN=test client CA", "-keyout", directory + "/ca.key", "-out", ca])
            client = try Self.clientCertificate("client", in: directory)
            otherClient = try Self.clientCertificate("other", in: directory)
        }

        private static func clientCertificate(_ name: String, in directory: String) throws -> (certificate: String, key: String) {
            let key = "\(directory)/\(name).key"
            let request = "\(directory)/\(name).csr"
            let certificate = "\(directory)/\(name).crt"
            try openssl(["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", "/CN=\(name)",
                         "-keyout", key, "-out", request])
            try openssl(["x509", "-req", "-in", request, "-CA", directory + "/ca.crt", "-CAkey", directory + "/ca.key",
                         "-CAcreateserial", "-days", "1", "-out", certificate])
            return (certificate, key)
        }

        private static func openssl(_ arguments: [String]) throws {
            try ChildProcess.run(["/usr/bin/openssl"] + arguments)
        }

        /// `x5t#S256` as RFC 8705 §3.1 defines it: base64url SHA-256 of the DER, from openssl's own DER.
        func thumbprint(_ certificate: String) throws -> String {
            let der = directory + "/" + UUID().uuidString + ".der"
            try Self.openssl(["x509", "-in", certificate, "-outform", "DER", "-out", der])
            return Base64URL.encode(SHA256.hash(data: try Data(contentsOf: URL(fileURLWithPath: der))))
        }

        func hexDigest(_ certificate: String) throws -> String {
            let bytes = try #require(Base64URL.decode(Array(try thumbprint(certificate).utf8)))
            return bytes.map { String(format: "%02x", $0) }.joined()
        }
    }

    static func boundToken(_ thumbprint: String) -> String {
        TestSigner.ec.token(claims: Claims.valid(extra: ["cnf": .object(["x5t#S256": .string(thumbprint)])]))
    }

    /// curl's status code (`000` when the handshake failed).
    static func curl(_ env: TestEnvironment, _ files: Files, token: String, certificate: (certificate: String, key: String)?,
                     http2: Bool = false) async throws -> String {
        var arguments = ["/usr/bin/curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", files.server.certificate,
                         "-H", "Authorization: Bearer \(token)", http2 ? "--http2" : "--http1.1"]
        if let certificate { arguments += ["--cert", certificate.certificate, "--key", certificate.key] }
        arguments.append("https://127.0.0.1:\(env.port)/v1/orders")
        return try await ChildProcess.runToEnd(arguments).output
    }

    /// TLS on the client port, asking for client certificates of the test CA.
    static func clientCertificates(_ files: Files, _ auth: ListenSettings.ClientAuth) -> (inout Configuration, TestJWKSServer) -> Void {
        { configuration, _ in
            configuration.listen.tlsCertificatePath = files.server.certificate
            configuration.listen.tlsKeyPath = files.server.key
            configuration.listen.clientCAPath = files.ca
            configuration.listen.clientAuth = auth
        }
    }

    @Test func aCertificateBoundTokenPassesOnlyWithItsCertificateOverBothProtocols() async throws {
        let files = try Files()
        defer { try? FileManager.default.removeItem(atPath: files.directory) }
        try await TestEnvironment.run(configure: Self.clientCertificates(files, .request)) { (env: TestEnvironment) async throws in
            let thumbprint = try files.thumbprint(files.client.certificate)
            let token = Self.boundToken(thumbprint)
            for http2 in [false, true] {
                #expect(try await Self.curl(env, files, token: token, certificate: files.client, http2: http2) == "200")
                #expect(try await Self.curl(env, files, token: token, certificate: files.otherClient, http2: http2) == "401")
                #expect(try await Self.curl(env, files, token: token, certificate: nil, http2: http2) == "401")
                // A token without a binding is a bearer token as before, with or without a certificate.
                #expect(try await Self.curl(env, files, token: TestSigner.ec.token(claims: Claims.valid()), certificate: nil, http2: http2)
                    == "200")
            }
            let bound = env.upstream.requests.filter { $0.value("x-auth-cnf-x5t-s256") != nil }
            #expect(bound.count == 2 && bound.allSatisfy { $0.value("x-auth-cnf-x5t-s256") == thumbprint })
            let reasons = env.failureLog.compactMap { $0["reason"]?.stringValue }
            #expect(reasons == Array(repeating: "certificate_binding_mismatch", count: 4))
            #expect(env.failureLog.first?["sub"] == .string("user-1"))
        }
    }

    @Test func requireRefusesAHandshakeWithoutACertificate() async throws {
        let files = try Files()
        defer { try? FileManager.default.removeItem(atPath: files.directory) }
        try await TestEnvironment.run(configure: Self.clientCertificates(files, .require)) { (env: TestEnvironment) async throws in
            let token = TestSigner.ec.token(claims: Claims.valid())
            #expect(try await Self.curl(env, files, token: token, certificate: nil) == "000")
            #expect(try await Self.curl(env, files, token: token, certificate: files.client) == "200")
        }
    }

    @Test(arguments: [ClientCertificateHeaderFormat.xfcc, .pem])
    func behindATrustedProxyTheCertificateComesFromItsHeader(_ format: ClientCertificateHeaderFormat) async throws {
        let files = try Files()
        defer { try? FileManager.default.removeItem(atPath: files.directory) }
        let header = format == .xfcc ? "x-forwarded-client-cert" : "x-ssl-client-cert"
        let pem = try String(contentsOfFile: files.client.certificate, encoding: .utf8)
        let escaped = pem.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        let value = format == .xfcc
            ? "By=spiffe://cluster.local/ns/a/sa/b;Hash=\(try files.hexDigest(files.client.certificate));Subject=\"CN=client,O=x\";URI="
            : escaped
        for trusted in [true, false] {
            try await TestEnvironment.run(configure: { configuration, _ in
                configuration.listen.clientCertificateHeader = header
                configuration.listen.clientCertificateHeaderFormat = format
                configuration.listen.trustedProxies = [AddressRange(trusted ? "127.0.0.0/8" : "10.0.0.0/8")!]
            }) { (env: TestEnvironment) async throws in
                let token = Self.boundToken(try files.thumbprint(files.client.certificate))
                let bound = try await env.request("/v1/orders", token: token, headers: [(header, value)])
                #expect(bound.status == (trusted ? 200 : 401), "trusted \(trusted)")
                let other = try await env.request("/v1/orders", token: Self.boundToken(try files.thumbprint(files.otherClient.certificate)),
                                                  headers: [(header, value)])
                #expect(other.json?["reason"] == .string("certificate_binding_mismatch"))
                // The header reaches the upstream from a trusted proxy only.
                #expect(try await env.request("/v1/orders", token: TestSigner.ec.token(claims: Claims.valid()), headers: [(header, value)]).status
                    == 200)
                #expect(env.upstream.last?.value(header) == (trusted ? value : nil), "trusted \(trusted)")
                // Nor under the spelling CGI-style upstreams read as the same header.
                let underscored = header.replacingOccurrences(of: "-", with: "_")
                #expect(try await env.request("/v1/orders", token: TestSigner.ec.token(claims: Claims.valid()), headers: [(underscored, value)])
                    .status == 200)
                #expect(env.upstream.last?.value(underscored) == (trusted ? value : nil), "trusted \(trusted), \(underscored)")
            }
        }
    }
}
