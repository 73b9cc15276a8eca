import Foundation
package import NIOCore
package import NIOHTTP1
import GatehouseSyntax
package import GatehouseHTTP
import GatehouseAuth
package import GatehouseExchange
package import GatehousePolicy
import GatehouseVocabulary

/// One request on a multiplexed HTTP/2 upstream connection (`HTTP2UpstreamConnection`, nghttp2): the head
/// sent as one HEADERS frame, the body as DATA, trailers both ways. Reads are manual: what arrives of a response
/// the client cannot take yet is held and the stream's window stays closed (`HTTP2StreamFlow`), so HTTP/2 flow
/// control reaches the upstream when the client is slow.
package final class HTTP2UpstreamLeg: UpstreamLeg {
    /// Held until the leg is finished or closed (not weak: a weak reference costs the driver a side table).
    package var delegate: (any UpstreamLegDelegate)?
    /// The stream, once the head went out.
    package private(set) var id: Int32 = 0
    private let connection: HTTP2UpstreamConnection
    private var flow = HTTP2StreamFlow<HTTP2StreamPart>()
    private var requestID = ""
    /// The request's END_STREAM went out (with its head, its last DATA or its trailers).
    private var requestEnded = false
    /// Its HEADERS went out: the stream exists at the upstream.
    private var started = false
    private var headReceived = false
    private var ended = false
    private var isClosed = false
    private var isDelivering = false

    init(connection: HTTP2UpstreamConnection) {
        self.connection = connection
    }

    package var isWritable: Bool { flow.isWritable && connection.isWritable }

    package func start(
        _ request: UpstreamRequestHead.Request, admission: Admission, services: ProxyServices, http2Body: Bool?,
        identityFields: WrittenIdentityFields?
    ) -> WrittenIdentityFields? {
        requestID = request.requestID
        let hasBody = http2Body ?? Self.headFramesBody(request.head.headers)
        var kept: [NGHTTP2Session.OutboundField]?
        if case .list(let list)? = identityFields { kept = list }
        let head = services.exchange.writeHTTP2UpstreamHead(
            request, admission: admission, at: services.wallClock.seconds(), scheme: connection.scheme, identityFields: kept)
        requestEnded = !hasBody
        started = true
        guard let stream = connection.submitRequest(self, head, hasBody: hasBody) else {
            // The connection is ending: not processed, the exchange may retry. Told on the next turn, not from inside
            // the `start` its driver is still in.
            connection.eventLoop.assumeIsolated().execute { self.closed(refused: true) }
            return nil
        }
        id = stream
        return head.identityFieldsWritten ? .list(head.identityFields) : nil
    }

    package func writeBody(_ buffer: ByteBuffer) {
        guard !requestEnded, !isClosed else { return }
        guard buffer.readableBytes > 0 else { return }
        flow.writing(buffer.readableBytes)
        connection.queue(id, buffer)
    }

    /// `bytes` of the request's body are on the socket (`HTTP2WriteLedger`): under the low watermark again, the
    /// exchange writes on.
    func wrote(_ bytes: Int) {
        if flow.wrote(bytes) && connection.isWritable { delegate?.upstreamLegWritabilityChanged(isWritable: true) }
    }

    package func writeEnd(trailers: HTTPHeaders?) {
        guard !requestEnded, !isClosed else { return }
        requestEnded = true
        let fields = trailers.flatMap { $0.isEmpty ? nil : $0.http2Fields }
        connection.queueEnd(id, trailers: fields)
    }

    package func flush() { connection.flushSoon() }

    /// Asks for more of the response: what was held is handed on now.
    package func read() {
        flow.requestRead()
        guard flow.hasHeldFrames, !isDelivering else { return }
        isDelivering = true
        while !isClosed, let part = flow.nextHeld() { deliver(part) }
        isDelivering = false
        readComplete()
        connection.flushSoon()
    }

    /// Whether an HTTP/1.x head says a body follows (chunked, or a length other than 0).
    private static func headFramesBody(_ headers: HTTPHeaders) -> Bool {
        headers.contains(name: "transfer-encoding") || headers.first(name: "content-length").map { $0 != "0" } ?? false
    }

    /// HTTP/2 has no 101 (RFC 9113 §8.6): never a tunnel.
    package func takeTunnelEnd() -> UpstreamTunnelEnd? { nil }

    /// A stream that did not complete is reset (the upstream stops working on it).
    package func finish(completed: Bool) {
        delegate = nil
        guard started else {
            connection.discard(self)  // never opened: no stream to reset
            return
        }
        if !(completed && ended) && !isClosed { connection.reset(id, code: HTTP2ConnectionError.cancel) }
    }

    // MARK: - From the connection

    package func received(_ part: consuming HTTP2StreamPart) {
        guard !isClosed, let part = flow.arrived(consume part) else { return }
        deliver(consume part)
    }

    /// The connection's read is over: the leg reads on only if its exchange asks again.
    package func readComplete() {
        flow.readEnded()
        delegate?.upstreamLegReadComplete()
    }

    package func connectionBecameWritable() {
        if flow.isWritable { delegate?.upstreamLegWritabilityChanged(isWritable: true) }
    }

    /// The stream closed. `refused`: REFUSED_STREAM (RFC 9113 §8.7), the upstream did not process it.
    package func closed(refused: Bool) {
        guard !isClosed else { return }
        isClosed = true
        flow.dropHeld()
        if !ended, let delegate {
            self.delegate = nil
            delegate.upstreamLegFailed(refused && !headReceived ? .refused : .failed)
        }
    }

    private func deliver(_ part: consuming HTTP2StreamPart) {
        let now = NIODeadline.now()  // one reading for the part's head, body and end
        switch consume part {
        case .fields(let fields, _) where !Self.isWellFormed(fields, isTrailers: headReceived):
            resetMalformed()
        case .fields(let fields, let endStream) where !headReceived:
            let status = Self.status(fields) ?? 0
            if (100..<200).contains(status) && status != 101 && !endStream {
                // An interim head (RFC 9113 §8.1); HTTP/2 has no 101 (§8.6): that one is malformed below.
                delegate?.upstreamLegReceivedInformational(.http2(status: status, fields: fields, requestID: requestID))
                return
            }
            guard status >= 200 && status < 1000 else { return resetMalformed() }
            headReceived = true
            delegate?.upstreamLegReceivedHead(.http2(status: status, fields: fields, requestID: requestID), at: now)
            if endStream { end(trailers: nil, at: now) }
        case .fields(let fields, _):
            end(trailers: HTTPHeaders(fields), at: now)
        case .data(let buffer, let endStream):
            if buffer.readableBytes > 0 {
                connection.consumed(id, bytes: buffer.readableBytes)
                delegate?.upstreamLegReceivedBody(buffer, at: now)
            }
            if endStream { end(trailers: nil, at: now) }
        }
    }

    private func end(trailers: HTTPHeaders?, at now: NIODeadline) {
        ended = true
        delegate?.upstreamLegReceivedEnd(trailers: trailers, at: now)
    }

    /// A malformed response (RFC 9113 §8.1.1): the stream is reset; its closing reports the failure (502 before a
    /// head was relayed, a cut response after).
    private func resetMalformed() {
        connection.reset(id, code: HTTP2ConnectionError.protocolError)
    }

    /// The upstream's block read by Gatehouse's rules (NIO's validation is off on upstream connections: Gatehouse
    /// builds every request it sends, and reads what comes back once, here): the one `:status` first (none in
    /// trailers), then lower-case token names, no connection-specific field, values that may be relayed as they came.
    /// Read in place, by index: a `for (name, value) in block` copies each field's strings (a retain and a release
    /// each, twelve of each a gRPC call's two blocks).
    static func isWellFormed(_ block: HTTP2FieldList, isTrailers: Bool) -> Bool {
        for index in block.indices {
            if block[index].0.utf8.first == ASCIIByte.colon {
                guard index == 0, !isTrailers, block[index].0 == ":status" else { return false }
                continue
            }
            guard HTTP2FieldName.isLowerCaseToken(block[index].0), !HTTP2FieldName.isConnectionSpecific(block[index].0),
                  HTTP2FieldName.isRelayableValue(block[index].1)
            else { return false }
        }
        return true
    }

    /// The well-formed block's `:status`: its first field, if any.
    private static func status(_ fields: HTTP2FieldList) -> Int? {
        guard let first = fields.indices.first, fields[first].0 == ":status" else { return nil }
        return Int(fields[first].1)
    }

}
