import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL
import GatehouseConfig

/// The TLS contexts: the client port's (swapped on reload), the ext_authz port's, the upstream's.
extension Gatehouse {
    /// Re-reads the certificate and key files (renewed in place); a pair that does not load keeps the old one.
    func reloadCertificates(_ listen: ListenSettings) {
        guard serverTLS.withLockedValue({ $0 }) != nil else { return }
        do {
            if let context = try Self.serverTLS(listen) { serverTLS.withLockedValue { $0 = context } }
        } catch {
            logger.error("reload: TLS certificate not replaced", metadata: ["gatehouse.error": "\(error)"])
        }
    }

    /// `[listen] tls_cert` / `tls_key`: TLS on the client port; ALPN offers `h2` unless `[listen] http2 = false`.
    static func serverTLS(_ listen: ListenSettings) throws -> NIOSSLContext? {
        guard let certificatePath = listen.tlsCertificatePath, let keyPath = listen.tlsKeyPath else { return nil }
        return try serverTLS(
            table: "[listen]", certificatePath: certificatePath, keyPath: keyPath, alpn: listen.http2 ? ["h2", "http/1.1"] : ["http/1.1"],
            clientCAPath: listen.clientCAPath, verification: listen.clientAuth == .require ? .noHostnameVerification : .optionalVerification)
    }

    /// TLS on the `[ext_authz]` port, when configured: ALPN `h2` (gRPC) and `http/1.1`; with `client_ca`, only
    /// callers with a certificate from it.
    static func extAuthzTLS(_ settings: ExtAuthzSettings) throws -> NIOSSLContext? {
        guard let certificatePath = settings.tlsCertificatePath, let keyPath = settings.tlsKeyPath else { return nil }
        return try serverTLS(
            table: "[ext_authz]", certificatePath: certificatePath, keyPath: keyPath, alpn: ["h2", "http/1.1"],
            clientCAPath: settings.clientCAPath, verification: .noHostnameVerification)
    }

    /// A listener's TLS context; with `clientCAPath`, client certificates of that CA are asked for (`verification`:
    /// required, or optional).
    static func serverTLS(
        table: String, certificatePath: String, keyPath: String, alpn: [String], clientCAPath: String?,
        verification: CertificateVerification
    ) throws -> NIOSSLContext {
        do {
            let chain = try NIOSSLCertificate.fromPEMFile(certificatePath).map(NIOSSLCertificateSource.certificate)
            let key = try NIOSSLPrivateKey(file: keyPath, format: .pem)
            var tls = TLSConfiguration.makeServerConfiguration(certificateChain: chain, privateKey: .privateKey(key))
            tls.applicationProtocols = alpn
            if let caPath = clientCAPath {
                do {
                    tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(caPath))
                } catch {
                    throw StartError(description: "cannot load \(table) client_ca \(caPath): \(error)")
                }
                tls.certificateVerification = verification
            }
            return try NIOSSLContext(configuration: tls)
        } catch let error as StartError {
            throw error
        } catch {
            throw StartError(description: "cannot load \(table) tls_cert \(certificatePath) / tls_key \(keyPath): \(error)")
        }
    }

    /// https upstreams: certificates verified against `ca_file` when given, else the system's trust store.
    static func upstreamTLS(_ upstream: UpstreamSettings) throws -> NIOSSLContext {
        var tls = TLSConfiguration.makeClientConfiguration()
        if upstream.protocolVersion == .http2 { tls.applicationProtocols = ["h2"] }
        if let caFile = upstream.caFile {
            do {
                tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(caFile))
            } catch {
                throw StartError(description: "cannot load [upstream] ca_file \(caFile): \(error)")
            }
        }
        return try NIOSSLContext(configuration: tls)
    }
}
