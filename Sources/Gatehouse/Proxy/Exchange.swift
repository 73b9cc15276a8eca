import NIOCore
import NIOHTTP1

/// One request/response passing through a client connection. Lives on the connection's event loop.
final class Exchange {
    let request: UpstreamRequestHead.Request
    let rule: RouteRule
    let token: Substring?
    let startedAt: NIODeadline
    var upstreamHead: UpstreamRequestHead.Written?
    /// Body bytes that arrived before the upstream connection (an empty array costs no allocation).
    var bufferedBody: [ByteBuffer] = []
    var requestEnded = false
    var bodyForwarded = false
    var connection: UpstreamConnection?
    var responseHeadSent = false
    var responseKeepAlive = true
    /// The response body goes to the client with chunked framing (set with the relayed head).
    var chunkedToClient = false
    var upstreamKeepAlive = true
    /// The upstream's next sign of life is due by then: its response head within `[upstream] timeout`
    /// (else 504), then each further piece of it within `idle_timeout` (else the connection is cut).
    var responseDeadline: NIODeadline?
    var hasRetried = false
    /// The client presented the same token as its previous verified request on this connection.
    var presentsRecentToken = false
    /// Set for `/.gatehouse/*`: answered locally once admitted.
    var endpoint: OwnEndpoint?
    /// The request on the wire is a HEAD: its answer has no body. (For `/.gatehouse/check`, `head`
    /// is the request being judged, whose method the fronting proxy reports, not this one's.)
    var isHEAD: Bool

    init(request: UpstreamRequestHead.Request, rule: RouteRule, token: Substring?, startedAt: NIODeadline) {
        self.request = request
        self.rule = rule
        self.token = token
        self.startedAt = startedAt
        self.isHEAD = request.head.method == .HEAD
    }

    var head: HTTPRequestHead { request.head }
    var requestID: String { request.requestID }
    var routeAuth: String { rule.auth.rawValue }

    /// Whether the client wants this connection kept open after the response. Not after a request
    /// asking for an upgrade that is not tunnelled: the parser stops at such a request.
    var clientKeepAlive: Bool { request.head.isKeepAlive && !request.head.headers.contains(name: "upgrade") }

    /// HTTP/1.1 (or later 1.x): takes chunked bodies and 1xx responses; HTTP/1.0 takes neither.
    var clientSpeaksHTTP11: Bool { request.head.version.major == 1 && request.head.version.minor >= 1 }

    /// Whether a request the upstream may have received can be sent again (RFC 9110 §9.2.2).
    var isIdempotent: Bool { RequestMethods.isIdempotent(request.head.method) }
}
