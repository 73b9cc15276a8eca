package import NIOHTTP1
import GatehouseSyntax

/// What a request offers besides its token to show that its sender holds the key the token is bound
/// to: the `Authorization` scheme, the `DPoP` proof header (RFC 9449), and the TLS client certificate
/// of the connection (RFC 8705). Read at intake, judged after the token verified (`SenderConstraints`).
package struct SenderEvidence: Sendable {
    package enum Scheme: Sendable, Equatable {
        /// `Authorization: Bearer`, or the configured cookie or header.
        case bearer
        /// `Authorization: DPoP`.
        case dpop
    }

    package enum ProofHeader: Sendable, Equatable {
        case absent
        case one(Substring)
        case several
    }

    package var scheme: Scheme = .bearer
    package var proof: ProofHeader = .absent
    /// SHA-256 of the client certificate's DER, base64url (`x5t#S256`), when the connection presented one.
    package var certificateThumbprint: String?
    /// The TCP peer: a `[listen] client_cert_header` is believed from trusted proxies only, and read only
    /// for a token bound to a certificate (`SenderConstraints`), never on every request.
    package var clientIP = ""

    package static let none = SenderEvidence()

    package init(scheme: Scheme = .bearer, proof: ProofHeader = .absent, certificateThumbprint: String? = nil, clientIP: String = "") {
        self.scheme = scheme
        self.proof = proof
        self.certificateThumbprint = certificateThumbprint
        self.clientIP = clientIP
    }

    /// The `DPoP` header fields of a request (at most one may be sent, RFC 9449 §4.3 check 1).
    package static func proofHeader(in headers: HTTPHeaders) -> ProofHeader {
        var found: ProofHeader = .absent
        for header in headers where header.name.utf8.count == 4 && header.name.utf8.elementsEqualIgnoringASCIICase(dpopName) {
            if case .absent = found { found = .one(header.value[...]) } else { return .several }
        }
        return found
    }

    private static let dpopName = "dpop".utf8
}
