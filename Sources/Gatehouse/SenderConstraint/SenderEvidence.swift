import NIOHTTP1
import GatehouseSyntax

/// What a request offers besides its token to show that its sender holds the key the token is bound
/// to: the `Authorization` scheme, the `DPoP` proof header (RFC 9449), and the TLS client certificate
/// of the connection (RFC 8705). Read at intake, judged after the token verified (`SenderConstraints`).
struct SenderEvidence: Sendable {
    enum Scheme: Sendable, Equatable {
        /// `Authorization: Bearer`, or the configured cookie or header.
        case bearer
        /// `Authorization: DPoP`.
        case dpop
    }

    enum ProofHeader: Sendable, Equatable {
        case absent
        case one(Substring)
        case several
    }

    var scheme: Scheme = .bearer
    var proof: ProofHeader = .absent
    /// SHA-256 of the client certificate's DER, base64url (`x5t#S256`), when the connection presented one.
    var certificateThumbprint: String?
    /// The TCP peer: a `[listen] client_cert_header` is believed from trusted proxies only, and read only
    /// for a token bound to a certificate (`SenderConstraints`), never on every request.
    var clientIP = ""

    static let none = SenderEvidence()

    /// The `DPoP` header fields of a request (at most one may be sent, RFC 9449 §4.3 check 1).
    static func proofHeader(in headers: HTTPHeaders) -> ProofHeader {
        var found: ProofHeader = .absent
        for header in headers where header.name.utf8.count == 4 && header.name.utf8.elementsEqualIgnoringASCIICase(dpopName) {
            if case .absent = found { found = .one(header.value[...]) } else { return .several }
        }
        return found
    }

    private static let dpopName = "dpop".utf8
}
