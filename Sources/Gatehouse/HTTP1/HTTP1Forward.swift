import NIOCore
import NIOHTTP1

/// One request forwarded by an HTTP/1.1 client connection, from its upstream leg to its response's
/// end (the core, `ExchangeStateMachine`, had it before). Lives on the connection's event loop.
final class HTTP1Forward {
    let request: UpstreamRequestHead.Request
    let rule: RouteRule
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
    /// The request on the wire is a HEAD: its answer has no body.
    let isHEAD: Bool

    init(_ admitted: ExchangeRequest, bufferedBody: [ByteBuffer], requestEnded: Bool) {
        self.request = admitted.request
        self.rule = admitted.rule
        self.isHEAD = admitted.isHEAD
        self.bufferedBody = bufferedBody
        self.requestEnded = requestEnded
    }

    var head: HTTPRequestHead { request.head }
    var requestID: String { request.requestID }
    var routeAuth: String { rule.auth.rawValue }

    var clientKeepAlive: Bool { request.head.clientKeepAlive }
    var clientSpeaksHTTP11: Bool { request.head.version.major == 1 && request.head.version.minor >= 1 }

}

extension HTTPRequestHead {
    /// Whether an HTTP/1.x client wants its connection kept open after the response. Not after a
    /// request asking for an upgrade that is not tunnelled: the parser stops at such a request.
    var clientKeepAlive: Bool { isKeepAlive && !headers.contains(name: "upgrade") }
}
