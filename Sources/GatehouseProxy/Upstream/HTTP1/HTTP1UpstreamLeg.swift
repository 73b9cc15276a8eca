import Foundation
import NIOCore
import NIOHTTP1
import GatehouseHTTP
import GatehouseAuth
import GatehouseExchange
import GatehousePolicy
import GatehouseVocabulary

/// A request forwarded over a pooled HTTP/1.1 connection: the head written as bytes (with the identity
/// fields remembered for the connection's token), the strict response parser, the head relayed as the
/// bytes it arrived in. A 101 hands the connection over for a tunnel.
/// One per connection, made with its first request and used again for each next one (`on(_:pool:)`): a
/// forwarded request allocates no leg.
final class HTTP1UpstreamLeg: UpstreamLeg, UpstreamConnectionDelegate {
    /// Held until the leg is finished (not weak: a weak reference costs the driver a side table per request).
    var delegate: (any UpstreamLegDelegate)?
    private let connection: UpstreamConnection
    private let pool: UpstreamConnectionPool
    private var requestID = ""
    private var services: ProxyServices?
    private var bodySent = false
    private var responseEnded = false
    /// The upstream lets the connection be reused after this response.
    private var upstreamKeepAlive = true
    /// A 101 head, reported with its end (the tunnel starts then).
    private var switchingHead: UpstreamResponseHead?
    private var isFinished = false

    private init(_ connection: UpstreamConnection, pool: UpstreamConnectionPool) {
        self.connection = connection
        self.pool = pool
    }

    /// The connection's leg, ready for a new request (the connection keeps it until it closes).
    static func on(_ connection: UpstreamConnection, pool: UpstreamConnectionPool) -> HTTP1UpstreamLeg {
        let leg = connection.leg ?? HTTP1UpstreamLeg(connection, pool: pool)
        connection.leg = leg
        connection.delegate = leg
        leg.delegate = nil
        leg.services = nil
        leg.bodySent = false
        leg.responseEnded = false
        leg.upstreamKeepAlive = true
        leg.switchingHead = nil
        leg.isFinished = false
        return leg
    }

    var isWritable: Bool { connection.channel.isWritable }

    func start(
        _ request: UpstreamRequestHead.Request, admission: Admission, services: ProxyServices, http2Body: Bool?,
        identityFields: WrittenIdentityFields?
    ) -> WrittenIdentityFields? {
        requestID = request.requestID
        self.services = services
        var kept: ByteBuffer?
        if case .bytes(let bytes)? = identityFields { kept = bytes }
        // HTTP/2 frames the body itself: one without a length goes chunked over HTTP/1.1.
        let written = services.exchange.writeUpstreamHead(
            request, admission: admission, at: services.wallClock.seconds(), reusing: &connection.headBuffer,
            allocator: connection.allocator, chunkedBody: http2Body ?? false, identityFields: kept)
        connection.startRequest(head: written.bytes, chunkedBody: written.chunkedBody, isHEAD: request.head.method == .HEAD)
        connection.read()
        return written.identityFields.map { .bytes($0) }
    }

    func writeBody(_ buffer: ByteBuffer) {
        bodySent = true
        connection.writeBody(buffer)
    }

    /// HTTP/1.1 request trailers are not forwarded (chunked trailers are rarely honoured upstream).
    func writeEnd(trailers: HTTPHeaders?) {
        connection.writeEnd()
    }

    func flush() { connection.flush() }

    func read() { connection.read() }

    func finish(completed: Bool) {
        guard !isFinished else { return }
        isFinished = true
        delegate = nil
        completed && responseEnded && upstreamKeepAlive ? pool.release(connection) : pool.discard(connection)
    }

    func takeTunnelEnd() -> UpstreamTunnelEnd? {
        guard !isFinished, switchingHead != nil else { return nil }
        isFinished = true
        delegate = nil
        connection.delegate = nil
        return UpstreamTunnelEnd(channel: connection.channel, httpHandler: connection)
    }

    // MARK: UpstreamConnectionDelegate

    func upstreamReceived(_ part: consuming UpstreamResponseParser.Part, at now: NIODeadline) {
        switch consume part {
        case .head(let head):
            if head.status == 101 {
                switchingHead = head
            } else if head.isInformational {
                delegate?.upstreamLegReceivedInformational(.relayed(head, requestID: requestID))
            } else {
                upstreamKeepAlive = head.keepAlive
                delegate?.upstreamLegReceivedHead(.relayed(head, requestID: requestID), at: now)
            }
        case .body(let buffer):
            delegate?.upstreamLegReceivedBody(buffer, at: now)
        case .end:
            if let head = switchingHead {
                delegate?.upstreamLegSwitchedProtocols(.relayed(head, requestID: requestID))
                return
            }
            responseEnded = true
            delegate?.upstreamLegReceivedEnd(trailers: nil, at: now)
        }
    }

    func upstreamReadComplete() { delegate?.upstreamLegReadComplete() }

    func upstreamWritabilityChanged(isWritable: Bool) { delegate?.upstreamLegWritabilityChanged(isWritable: isWritable) }

    func upstreamClosed() {
        guard !responseEnded else { return }
        // A keep-alive connection the upstream closed as we reused it, without a byte of answer, may be retried.
        let closedOnReuse = connection.isReused && !connection.answered && !bodySent
        if !closedOnReuse { services?.logUpstreamProtocolError(connection) }
        let delegate = self.delegate
        self.delegate = nil
        finish(completed: false)
        delegate?.upstreamLegFailed(closedOnReuse ? .closedOnReuse : .failed)
    }
}
