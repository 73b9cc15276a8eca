import NIOCore
import NIOHTTP1

/// An HTTP/2 client's request forwarded over a pooled HTTP/1.1 connection: the same head writer,
/// strict response parser and pool as HTTP/1.1 clients, with the response turned into parts.
final class HTTP1UpstreamLeg: UpstreamLeg, UpstreamConnectionDelegate {
    weak var delegate: (any UpstreamLegDelegate)?
    private let connection: UpstreamConnection
    private let pool: UpstreamConnectionPool
    private var requestID = ""
    private var services: ProxyServices?
    private var bodySent = false
    private var responseEnded = false
    private var isFinished = false

    init(_ connection: UpstreamConnection, pool: UpstreamConnectionPool) {
        self.connection = connection
        self.pool = pool
        connection.delegate = self
    }

    var isWritable: Bool { connection.channel.isWritable }

    func start(_ request: UpstreamRequestHead.Request, admission: Gatekeeper.Admission, services: ProxyServices, hasBody: Bool) {
        requestID = request.requestID
        self.services = services
        var written = services.upstreamHead.make(request, admission: admission, allocator: connection.channel.allocator)
        if hasBody && !written.chunkedBody && !request.head.headers.contains(name: "content-length") {
            // HTTP/2 frames the body itself: one without a length goes chunked over HTTP/1.1.
            written = services.upstreamHead.make(request, admission: admission, allocator: connection.channel.allocator, chunkedBody: true)
        }
        connection.startRequest(head: written.bytes, chunkedBody: written.chunkedBody, isHEAD: request.head.method == .HEAD)
        connection.channel.read()
    }

    func writeBody(_ buffer: ByteBuffer) {
        bodySent = true
        connection.writeBody(buffer)
    }

    /// HTTP/1.1 request trailers are not forwarded (chunked trailers are rarely honoured upstream).
    func writeEnd(trailers: HTTPHeaders?) {
        connection.writeEnd()
    }

    func flush() { connection.channel.flush() }

    func read() { connection.channel.read() }

    func finish(completed: Bool) {
        guard !isFinished else { return }
        isFinished = true
        completed && responseEnded ? pool.release(connection) : pool.discard(connection)
    }

    // MARK: UpstreamConnectionDelegate

    func upstreamReceived(_ part: UpstreamResponseParser.Part) {
        switch part {
        case .head(let head):
            // 1xx heads are not relayed through a leg (a stream exchange answers with one head), nor is a 101.
            if head.isInformational {
                if head.status == 101 { fail(.failed) }
                return
            }
            delegate?.upstreamLegReceivedHead(head.relayedHead(requestID: requestID))
        case .body(let buffer):
            delegate?.upstreamLegReceivedBody(buffer)
        case .end:
            responseEnded = true
            delegate?.upstreamLegReceivedEnd(trailers: nil)
        }
    }

    func upstreamReadComplete() { delegate?.upstreamLegReadComplete() }

    func upstreamWritabilityChanged(isWritable: Bool) { delegate?.upstreamLegWritabilityChanged(isWritable: isWritable) }

    func upstreamClosed() {
        guard !responseEnded else { return }
        let closedOnReuse = connection.isReused && !connection.answered && !bodySent
        if !closedOnReuse { services?.logUpstreamProtocolError(connection) }
        fail(closedOnReuse ? .closedOnReuse : .failed)
    }

    private func fail(_ loss: UpstreamLoss) {
        let delegate = self.delegate
        self.delegate = nil
        finish(completed: false)
        delegate?.upstreamLegFailed(loss)
    }
}
