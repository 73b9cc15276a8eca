package import NIOCore
package import NIOHTTP1
package import GatehouseHTTP
package import GatehouseConfig
import GatehouseAuth
package import GatehouseExchange
package import GatehousePolicy

/// The upstream half of one request forwarded for a `StreamDriver`: an HTTP/1.1 pooled
/// connection or an HTTP/2 stream, both driven the same way and both on the driver's event loop.
package protocol UpstreamLeg: AnyObject {
    /// Who hears the response: held until the leg is finished, closed or hands its channel over.
    var delegate: (any UpstreamLegDelegate)? { get set }
    /// Whether the upstream takes more request body now (false: stop reading the client).
    var isWritable: Bool { get }
    /// Sends the request head. `http2Body`: for an HTTP/2 client's request, whether a body follows (false when it
    /// ended without body bytes); nil for an HTTP/1.x request, whose head frames its body. `identityFields`: what
    /// the same identity was written with before (`ConnectionTokenMemory`), in the leg's own form; returns the identity
    /// fields written afresh, to be kept for the next request.
    func start(
        _ request: UpstreamRequestHead.Request, admission: Admission, services: ProxyServices, http2Body: Bool?,
        identityFields: WrittenIdentityFields?
    ) -> WrittenIdentityFields?
    func writeBody(_ buffer: ByteBuffer)
    func writeEnd(trailers: HTTPHeaders?)
    func flush()
    /// Asks for more of the response (reads are manual, for backpressure).
    func read()
    /// The exchange is over: a complete one may be reused, anything else is closed or reset.
    func finish(completed: Bool)
    /// After a 101 the driver accepted (`upstreamLegSwitchedProtocols`): the connection, handed over for a
    /// byte tunnel and no longer the leg's (nor the pool's); nil if the leg has none to give.
    func takeTunnelEnd() -> UpstreamTunnelEnd?
}

/// What an upstream leg reports; calls arrive on the stream's event loop.
package protocol UpstreamLegDelegate: AnyObject {
    /// The final response head, hop-by-hop fields removed. `now`, here and for the body and the end: when the bytes
    /// that carried it arrived (the leg reads the clock once per delivery, not once per part).
    func upstreamLegReceivedHead(_ head: ClientResponseHead, at now: NIODeadline)
    /// An interim (1xx) head other than 101: `100 Continue` and friends.
    func upstreamLegReceivedInformational(_ head: ClientResponseHead)
    /// A whole 101 answer: the upstream switched protocols (a WebSocket); `takeTunnelChannel()` hands the
    /// connection over, else the leg is finished like a failed one.
    func upstreamLegSwitchedProtocols(_ head: ClientResponseHead)
    func upstreamLegReceivedBody(_ buffer: ByteBuffer, at now: NIODeadline)
    func upstreamLegReceivedEnd(trailers: HTTPHeaders?, at now: NIODeadline)
    func upstreamLegReadComplete()
    func upstreamLegWritabilityChanged(isWritable: Bool)
    /// The upstream went away or broke the protocol, before a byte of answer or after.
    func upstreamLegFailed(_ loss: UpstreamLoss)
}

/// Opens upstream legs on the caller's event loop, over the pools that loop owns.
package struct UpstreamLegFactory: Sendable {
    package let protocolVersion: UpstreamProtocol
    let http1Pools: [ObjectIdentifier: NIOLoopBound<UpstreamConnectionPool>]
    let http2Pools: [ObjectIdentifier: NIOLoopBound<HTTP2UpstreamPool>]

    /// A leg at once, with no callback (the common case): an idle pooled HTTP/1.1 connection of `eventLoop`, or a
    /// stream of an HTTP/2 connection with room; nil when there is none (then `open`). The callback's closures were
    /// two allocations a request.
    func openIdle(on eventLoop: any EventLoop) -> (any UpstreamLeg)? {
        switch protocolVersion {
        case .http1:
            guard let pool = http1Pools[ObjectIdentifier(eventLoop)]?.value, let connection = pool.takeIdle() else { return nil }
            return HTTP1UpstreamLeg.on(connection, pool: pool)
        case .http2:
            return http2Pools[ObjectIdentifier(eventLoop)]?.value.openStreamNow()
        }
    }

    /// Called back on `eventLoop`, which owns the pools used.
    package func open(on eventLoop: any EventLoop, _ completion: @escaping (Result<any UpstreamLeg, any Error>) -> Void) {
        let key = ObjectIdentifier(eventLoop)
        switch protocolVersion {
        case .http1:
            guard let pool = http1Pools[key]?.value else { return completion(.failure(ChannelError.ioOnClosedChannel)) }
            if let connection = pool.takeIdle() { return completion(.success(HTTP1UpstreamLeg.on(connection, pool: pool))) }
            pool.connect().assumeIsolated().whenComplete { result in
                completion(result.map { HTTP1UpstreamLeg.on($0, pool: pool) })
            }
        case .http2:
            guard let pool = http2Pools[key]?.value else { return completion(.failure(ChannelError.ioOnClosedChannel)) }
            pool.openStream { completion($0.map { $0 }) }
        }
    }
}
