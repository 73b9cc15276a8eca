import NIOCore
import NIOHTTP1

/// The upstream half of one request forwarded for a `StreamDriver`: an HTTP/1.1 pooled
/// connection or an HTTP/2 stream, both driven the same way and both on the stream's event loop.
protocol UpstreamLeg: AnyObject {
    var delegate: (any UpstreamLegDelegate)? { get set }
    /// Whether the upstream takes more request body now (false: stop reading the client).
    var isWritable: Bool { get }
    /// Sends the request head; `hasBody` is false when the request ended without body bytes.
    func start(_ request: UpstreamRequestHead.Request, admission: Gatekeeper.Admission, services: ProxyServices, hasBody: Bool)
    func writeBody(_ buffer: ByteBuffer)
    func writeEnd(trailers: HTTPHeaders?)
    func flush()
    /// Asks for more of the response (reads are manual, for backpressure).
    func read()
    /// The exchange is over: a complete one may be reused, anything else is closed or reset.
    func finish(completed: Bool)
}

/// What an upstream leg reports; calls arrive on the stream's event loop.
protocol UpstreamLegDelegate: AnyObject {
    /// The response head, hop-by-hop fields removed; informational (1xx) heads are not reported.
    func upstreamLegReceivedHead(_ head: HTTPResponseHead)
    func upstreamLegReceivedBody(_ buffer: ByteBuffer)
    func upstreamLegReceivedEnd(trailers: HTTPHeaders?)
    func upstreamLegReadComplete()
    func upstreamLegWritabilityChanged(isWritable: Bool)
    /// The upstream went away or broke the protocol, before a byte of answer or after.
    func upstreamLegFailed(_ loss: UpstreamLoss)
}

/// Opens upstream legs on the caller's event loop, over the pools that loop owns.
struct UpstreamLegFactory: Sendable {
    let protocolVersion: UpstreamProtocol
    let http1Pools: [ObjectIdentifier: NIOLoopBound<UpstreamConnectionPool>]
    let http2Pools: [ObjectIdentifier: NIOLoopBound<HTTP2UpstreamPool>]

    /// Called back on `eventLoop`, which owns the pools used.
    func open(on eventLoop: any EventLoop, _ completion: @escaping (Result<any UpstreamLeg, any Error>) -> Void) {
        let key = ObjectIdentifier(eventLoop)
        switch protocolVersion {
        case .http1:
            guard let pool = http1Pools[key]?.value else { return completion(.failure(ChannelError.ioOnClosedChannel)) }
            if let connection = pool.takeIdle() { return completion(.success(HTTP1UpstreamLeg(connection, pool: pool))) }
            pool.connect().assumeIsolated().whenComplete { result in
                completion(result.map { HTTP1UpstreamLeg($0, pool: pool) })
            }
        case .http2:
            guard let pool = http2Pools[key]?.value else { return completion(.failure(ChannelError.ioOnClosedChannel)) }
            pool.openStream { completion($0.map { $0 }) }
        }
    }
}
