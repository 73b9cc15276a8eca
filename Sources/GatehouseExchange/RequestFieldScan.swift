import NIOHTTP1
import GatehouseSyntax

/// What intake and the upstream head ask of a request's fields, read in one pass over them: each pass over NIO's
/// fields costs references per field (issue 57: the Host check, the token's lookup and the Connection nominations were
/// three passes before the upstream head's own). The Host fields (docs/security.md P18-19), the Authorization fields,
/// and whether any Connection field is there (without one, nothing is nominated hop-by-hop).
struct RequestFieldScan {
    private(set) var hostCount = 0
    /// Every Host value is non-empty, without a space, `/` or `@`.
    private(set) var hostsAreUsable = true
    /// The last Authorization value, and how many there are.
    private(set) var authorization: String?
    private(set) var authorizationCount = 0
    private(set) var hasConnectionField = false

    init(_ headers: HTTPHeaders) {
        for (name, value) in headers {
            switch name.utf8.count {
            case 4 where ASCIIByte.hasFoldedHeaderNamePrefix(name, Self.host):
                hostCount += 1
                if value.isEmpty || value.utf8.contains(where: { $0 == ASCIIByte.space || $0 == ASCIIByte.slash || $0 == UInt8(ascii: "@") }) {
                    hostsAreUsable = false
                }
            case 10 where ASCIIByte.hasFoldedHeaderNamePrefix(name, Self.connection):
                hasConnectionField = true
            case 13 where name.utf8.elementsEqualIgnoringASCIICase("authorization".utf8):
                authorizationCount += 1
                authorization = value
            default:
                break
            }
        }
    }

    /// HTTP/1.1 needs exactly one Host; any version may not send two (docs/security.md P18-19). The HTTP/2 door hands
    /// over `:authority` as the one Host (HTTP2RequestHeadReader).
    func hasValidHost(version: HTTPVersion) -> Bool {
        hostsAreUsable && (hostCount == 1 || (hostCount == 0 && version == .http1_0))
    }

    private static let host = Array("host".utf8)
    private static let connection = Array("connection".utf8)
}
