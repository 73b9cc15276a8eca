import Crypto
import NIOCore
import NIOSSL
import GatehouseSyntax

/// Who is at the other end of a client connection: its address, and the TLS client certificate it
/// presented (RFC 8705 `x5t#S256`: SHA-256 of the DER, base64url), looked up once, at the first request,
/// when the handshake is surely done. Lives on the connection's event loop.
package final class ClientPeer {
    package let ip: String
    /// A TLS connection's channel, until its certificate is looked up. Held strongly, not `weak`: a weak reference gives
    /// the channel a side table, and every retain and release NIO makes of it then takes the runtime's slow path (~1 %
    /// of a request's CPU, issue 57). The cycle (channel, its handler, this peer) lasts until the lookup, or until the
    /// channel closes and NIO removes its handlers.
    private var channel: (any Channel)?
    private var thumbprint: String??

    init(channel: any Channel) {
        ip = channel.remoteAddress?.ipAddress ?? "unknown"
        if (try? channel.pipeline.syncOperations.handler(type: NIOSSLServerHandler.self)) != nil {
            self.channel = channel
        } else {
            thumbprint = .some(nil)  // no TLS: no certificate
        }
    }

    package var certificateThumbprint: String? {
        if let thumbprint { return thumbprint }
        let found = channel.flatMap(Self.certificateThumbprint(of:))
        thumbprint = .some(found)
        channel = nil
        return found
    }

    private static func certificateThumbprint(of channel: any Channel) -> String? {
        guard let certificate = try? channel.pipeline.syncOperations.nioSSL_peerCertificate(),
              let der = try? certificate.toDERBytes()
        else { return nil }
        return Base64URL.encode(SHA256.hash(data: der))
    }
}
