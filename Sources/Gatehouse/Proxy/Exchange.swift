import NIOCore
import NIOHTTP1

/// One request/response passing through a client connection. Lives on the connection's event loop.
final class Exchange {
    let request: UpstreamRequestHead.Request
    let rule: RouteRule
    let token: Substring?
    let startedAt: NIODeadline
    var upstreamHead: UpstreamRequestHead.Written?
    var bufferedBody = CircularBuffer<ByteBuffer>()
    var requestEnded = false
    var bodyForwarded = false
    var connection: UpstreamConnection?
    var responseHeadSent = false
    var responseKeepAlive = true
    /// The response body goes to the client with chunked framing (set with the relayed head).
    var chunkedToClient = false
    var upstreamKeepAlive = true
    /// The whole response must have arrived by then (`[upstream] timeout`): 504, or a cut connection.
    var responseDeadline: NIODeadline?
    var hasRetried = false
    /// Set for `/.gatehouse/*`: answered locally once admitted.
    var endpoint: OwnEndpoint?

    init(request: UpstreamRequestHead.Request, rule: RouteRule, token: Substring?, startedAt: NIODeadline) {
        self.request = request
        self.rule = rule
        self.token = token
        self.startedAt = startedAt
    }

    var head: HTTPRequestHead { request.head }
    var requestID: String { request.requestID }
    var routeAuth: String { rule.auth.rawValue }

    /// Whether the client wants this connection kept open after the response.
    var clientKeepAlive: Bool { request.head.isKeepAlive }
}
