import Foundation
package import NIOCore
package import NIOHPACK
package import NIOHTTP1
package import NIOHTTP2
import GatehouseSyntax
import GatehouseHTTP
package import GatehouseAuth
package import GatehouseExchange

/// One request on a multiplexed HTTP/2 upstream connection, frame by frame (no stream channel): the
/// head written as one HEADERS frame, the body as DATA, trailers both ways. Reads are manual: frames
/// of a response the client cannot take yet are held and the stream's window stays closed
/// (`HTTP2StreamFlow`), so HTTP/2 flow control reaches the upstream when the client is slow.
package final class HTTP2UpstreamLeg: UpstreamLeg {
    /// Held until the leg is finished or closed (not weak: a weak reference costs the driver a side table).
    package var delegate: (any UpstreamLegDelegate)?
    package let id: HTTP2StreamID
    private let connection: HTTP2UpstreamConnection
    private var flow: HTTP2StreamFlow<HTTP2Frame.FramePayload>
    private var requestID = ""
    /// The request's END_STREAM went out (with its head, its last DATA or its trailers).
    private var requestEnded = false
    /// Its HEADERS went out: the stream exists at the upstream.
    private var started = false
    private var headReceived = false
    private var ended = false
    private var isClosed = false
    private var isDelivering = false

    package init(id: HTTP2StreamID, connection: HTTP2UpstreamConnection, targetWindow: Int) {
        self.id = id
        self.connection = connection
        self.flow = HTTP2StreamFlow(targetWindow: targetWindow)
    }

    package var isWritable: Bool { flow.isUnderHighWatermark && connection.isWritable }

    package func start(
        _ request: UpstreamRequestHead.Request, admission: Gatekeeper.Admission, services: ProxyServices, http2Body: Bool?,
        identityFields: ByteBuffer?
    ) -> ByteBuffer? {
        requestID = request.requestID
        let hasBody = http2Body ?? Self.headFramesBody(request.head.headers)
        let head = services.exchange.upstreamHead.makeHTTP2Head(request, admission: admission, at: Int64(Date().timeIntervalSince1970), scheme: connection.scheme)
        requestEnded = !hasBody
        started = true
        write(.headers(.init(headers: head, endStream: !hasBody)), bytes: 0)
        return nil
    }

    package func writeBody(_ buffer: ByteBuffer) {
        guard !requestEnded else { return }
        write(.data(.init(data: .byteBuffer(buffer))), bytes: buffer.readableBytes)
    }

    package func writeEnd(trailers: HTTPHeaders?) {
        guard !requestEnded else { return }
        requestEnded = true
        if let trailers, !trailers.isEmpty {
            write(.headers(.init(headers: HPACKHeaders(httpHeaders: trailers, normalizeHTTPHeaders: true), endStream: true)), bytes: 0)
        } else {
            write(.data(.init(data: .byteBuffer(connection.allocator.buffer(capacity: 0)), endStream: true)), bytes: 0)
        }
    }

    package func flush() { connection.flushSoon() }

    /// Asks for more of the response: what was held is handed on now.
    package func read() {
        flow.requestRead()
        guard flow.hasHeldFrames, !isDelivering else { return }
        isDelivering = true
        while !isClosed, let payload = flow.nextHeld() { deliver(payload) }
        isDelivering = false
        if let increment = flow.heldFramesDelivered() { connection.sendWindowUpdate(id, increment) }
        readComplete()
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
        if !(completed && ended) && !isClosed {
            connection.write(HTTP2Frame(streamID: id, payload: .rstStream(.cancel)), promise: nil)
            connection.flushSoon()
        }
    }

    // MARK: - From the connection

    package func received(_ payload: HTTP2Frame.FramePayload) {
        guard !isClosed, let payload = flow.arrived(payload) else { return }
        deliver(payload)
    }

    /// The connection's read is over: the leg reads on only if its exchange asks again.
    package func readComplete() {
        flow.readEnded()
        delegate?.upstreamLegReadComplete()
    }

    package func windowChanged(to size: Int) {
        if let increment = flow.windowChanged(to: size) { connection.sendWindowUpdate(id, increment) }
    }

    package func connectionBecameWritable() {
        if flow.isUnderHighWatermark { delegate?.upstreamLegWritabilityChanged(isWritable: true) }
    }

    /// NIO closed the stream. `refused`: REFUSED_STREAM (RFC 9113 §8.7), the upstream did not process it.
    package func closed(refused: Bool) {
        guard !isClosed else { return }
        isClosed = true
        flow.dropHeld()
        if !ended, let delegate {
            self.delegate = nil
            delegate.upstreamLegFailed(refused && !headReceived ? .refused : .failed)
        }
    }

    private func deliver(_ payload: HTTP2Frame.FramePayload) {
        switch payload {
        case .headers(let headers) where !Self.isWellFormed(headers.headers, isTrailers: headReceived):
            resetMalformed()
        case .headers(let headers) where !headReceived:
            let status = Self.status(headers.headers) ?? 0
            if (100..<200).contains(status) && status != 101 && !headers.endStream {
                // An interim head (RFC 9113 §8.1); HTTP/2 has no 101 (§8.6): that one is malformed below.
                delegate?.upstreamLegReceivedInformational(.fields(Self.head(status, headers.headers, requestID: requestID)))
                return
            }
            guard status >= 200 && status < 1000 else { return resetMalformed() }
            headReceived = true
            delegate?.upstreamLegReceivedHead(.fields(Self.head(status, headers.headers, requestID: requestID)))
            if headers.endStream { end(trailers: nil) }
        case .headers(let headers):
            end(trailers: HTTPHeaders(headers.headers.map { ($0.name, $0.value) }))
        case .data(let data):
            guard case .byteBuffer(let buffer) = data.data else { return }
            if buffer.readableBytes > 0 { delegate?.upstreamLegReceivedBody(buffer) }
            if data.endStream { end(trailers: nil) }
        default:
            break
        }
    }

    private func end(trailers: HTTPHeaders?) {
        ended = true
        delegate?.upstreamLegReceivedEnd(trailers: trailers)
    }

    /// DATA is followed to the socket for the watermarks; a frame without bytes costs no promise.
    private func write(_ payload: HTTP2Frame.FramePayload, bytes: Int) {
        guard !isClosed else { return }
        guard bytes > 0 else {
            connection.write(HTTP2Frame(streamID: id, payload: payload), promise: nil)
            return
        }
        flow.writing(bytes)
        let written = connection.eventLoop.makePromise(of: Void.self)
        written.futureResult.assumeIsolated().whenComplete { _ in
            if self.flow.wrote(bytes) && self.connection.isWritable { self.delegate?.upstreamLegWritabilityChanged(isWritable: true) }
        }
        connection.write(HTTP2Frame(streamID: id, payload: payload), promise: written)
    }

    /// A malformed response (RFC 9113 §8.1.1): the stream is reset; its closing reports the failure (502 before a
    /// head was relayed, a cut response after).
    private func resetMalformed() {
        connection.write(HTTP2Frame(streamID: id, payload: .rstStream(.protocolError)), promise: nil)
        connection.flushSoon()
    }

    /// The upstream's block read by Gatehouse's rules (NIO's validation is off on upstream connections: Gatehouse
    /// builds every request it sends, and reads what comes back once, here): the one `:status` first (none in
    /// trailers), then lower-case token names, no connection-specific field, values that may be relayed as they came.
    package static func isWellFormed(_ block: HPACKHeaders, isTrailers: Bool) -> Bool {
        var isFirst = true
        for (name, value, _) in block {
            defer { isFirst = false }
            if name.utf8.first == ASCIIByte.colon {
                guard isFirst, !isTrailers, name == ":status" else { return false }
                continue
            }
            guard HTTP2FieldName.isLowerCaseToken(name), !HTTP2FieldName.isConnectionSpecific(name), HTTP2FieldName.isRelayableValue(value)
            else { return false }
        }
        return true
    }

    private static func status(_ headers: HPACKHeaders) -> Int? {
        headers.first(name: ":status").flatMap { Int($0) }
    }

    /// A response head: its status and fields (pseudo-header fields out), our request id in.
    private static func head(_ status: Int, _ headers: HPACKHeaders, requestID: String) -> HTTPResponseHead {
        HTTPResponseHead(version: .http2, status: HTTPResponseStatus(statusCode: status), headers: ResponseFields.relayed(headers, requestID: requestID))
    }
}
