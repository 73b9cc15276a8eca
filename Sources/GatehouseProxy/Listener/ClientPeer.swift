import Crypto
import NIOCore
import NIOSSL
import GatehouseSyntax

/// Who is at the other end of a client connection: its address, and the TLS client certificate it
/// presented (RFC 8705 `x5t#S256`: SHA-256 of the DER, base64url), looked up once, at the first request,
/// when the handshake is surely done. Lives on the connection's event loop.
package final class ClientPeer {
    package let ip: String
    private weak var channel: (any Channel)?
    private var thumbprint: String??

    init(channel: any Channel) {
        ip = channel.remoteAddress?.ipAddress ?? "unknown"
        self.channel = channel
    }

    package var certificateThumbprint: String? {
        if let thumbprint { return thumbprint }
        let found = channel.flatMap(Self.certificateThumbprint(of:))
        thumbprint = .some(found)
        return found
    }

    private static func certificateThumbprint(of channel: any Channel) -> String? {
        guard let certificate = try? channel.pipeline.syncOperations.nioSSL_peerCertificate(),
              let der = try? certificate.toDERBytes()
        else { return nil }
        return Base64URL.encode(SHA256.hash(data: der))
    }
}
