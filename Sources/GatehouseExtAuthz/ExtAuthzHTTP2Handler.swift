package import NIOCore
import NIOHPACK
import NIOHTTP1
package import NIOHTTP2
import GatehouseSyntax
package import GatehouseHTTP
import GatehouseAuth
import GatehouseExchange
import GatehouseProxy

/// The `[ext_authz]` port's HTTP/2 door, frame by frame like the client port's (`HTTP2ServerConnectionHandler`): no
/// stream multiplexer, so a Check costs no channel, pipeline or HTTP/1 parts of its own. Each stream's HEADERS and
/// DATA are gathered (a CheckRequest is small: at most `ExtAuthzContext.maxCheckRequestBytes`), handed to
/// `ExtAuthzResponder` once the stream ends, and its answer written as frames: HEADERS, DATA, trailers. The streams
/// answered in one read go out with one flush; the receive windows are topped up as DATA is taken.
package final class ExtAuthzHTTP2Handler: ChannelInboundHandler {
    package typealias InboundIn = HTTP2Frame
    package typealias OutboundOut = HTTP2Frame

    /// A stream whose request has not ended yet.
    private struct Gathering {
        var headers: HPACKHeaders
        /// The HEADERS frame ended the stream (a request without a body).
        var headersEndedStream: Bool
        var body = CheckRequestBody()
        var window = InboundFlowWindow(target: HTTP2ServerSetup.targetWindow)
        let startedAt: NIODeadline
    }

    private let responder: ExtAuthzResponder
    private let connectionGuard: HTTP2ConnectionGuard
    /// Streams NIO reported open, told to the guard and the manager.
    private var openStreams: HTTP2OpenStreams
    private let output: HTTP2FrameOutput
    private let eventLoop: any EventLoop
    /// A stream must have sent its whole request within this (`[listen] idle_timeout`), or it is reset.
    private let idleTimeout: TimeAmount
    private var timer = WakeTimer()
    private var gathering: [HTTP2StreamID: Gathering] = [:]
    private var peerIP = ""
    private var allocator = ByteBufferAllocator()
    /// Every gRPC answer's head, and the trailers of a successful call.
    private static let grpcHead: HPACKHeaders = [":status": "200", "content-type": "application/grpc"]
    private static let grpcOK: HPACKHeaders = ["grpc-status": "0"]
    private let tokenMemory = ConnectionTokenMemory()

    package init(
        context: ExtAuthzContext, eventLoop: any EventLoop, idleTimeout: TimeAmount, connectionGuard: HTTP2ConnectionGuard,
        manager: NIOHTTP2ServerConnectionManagementHandler.HTTP2StreamDelegate
    ) {
        self.eventLoop = eventLoop
        self.idleTimeout = idleTimeout
        self.responder = ExtAuthzResponder(context: context)
        self.connectionGuard = connectionGuard
        self.openStreams = HTTP2OpenStreams(connectionGuard: connectionGuard, manager: manager)
        self.output = HTTP2FrameOutput(eventLoop: eventLoop, targetWindow: HTTP2ServerSetup.targetWindow)
    }

    package func handlerAdded(context: ChannelHandlerContext) {
        output.attach(context)
        allocator = context.channel.allocator
        peerIP = context.channel.remoteAddress?.ipAddress ?? ""
    }

    package func handlerRemoved(context: ChannelHandlerContext) {
        timer.cancel()
        output.attach(nil)
        gathering.removeAll()
    }

    /// Streams that have not sent their whole request within `idle_timeout` of their HEADERS are reset (a slow or
    /// stalled caller holds no stream, nor the connection, for ever).
    private func wakeForStalledStreams(from startedAt: NIODeadline) {
        timer.wake(at: startedAt + idleTimeout, on: eventLoop, owner: self) { $0.resetStalledStreams() }
    }

    private func resetStalledStreams() {
        timer.fired()
        let now = NIODeadline.now()
        var next: NIODeadline?
        for (id, stream) in gathering {
            if stream.startedAt + idleTimeout <= now {
                gathering[id] = nil
                output.write(HTTP2Frame(streamID: id, payload: .rstStream(.cancel)), promise: nil)
                output.flushSoon()
            } else {
                next = min(next ?? stream.startedAt, stream.startedAt)
            }
        }
        if let next { wakeForStalledStreams(from: next) }
    }

    // MARK: - Inbound

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        output.readBegan()
        let frame = unwrapInboundIn(data)
        let id = frame.streamID
        guard id != .rootStream else {
            context.fireChannelRead(data)  // PING acknowledgements: the manager's
            return
        }
        switch frame.payload {
        case .headers(let headers):
            if gathering[id] == nil, connectionGuard.refusesNewStream(id) {
                output.write(HTTP2Frame(streamID: id, payload: .rstStream(.refusedStream)), promise: nil)
                output.flushSoon()
                return
            }
            // A stream's first HEADERS opens it; a second is its trailer section, which ends it (NIO checks that).
            let stream = gathering.removeValue(forKey: id)
                ?? Gathering(headers: headers.headers, headersEndedStream: headers.endStream, startedAt: .now())
            if headers.endStream {
                respond(id, stream, context: context)
            } else {
                if gathering.isEmpty { wakeForStalledStreams(from: stream.startedAt) }
                gathering[id] = stream
            }
        case .data(let data):
            guard var stream = gathering.removeValue(forKey: id), case .byteBuffer(var buffer) = data.data else { return }
            stream.body.append(&buffer)
            if data.endStream { respond(id, stream, context: context) } else { gathering[id] = stream }
        case .rstStream:
            gathering[id] = nil
        default:
            break
        }
    }

    package func channelReadComplete(context: ChannelHandlerContext) {
        output.readEnded()
        context.fireChannelReadComplete()
    }

    package func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // As on the client port: NIO's stream events end here.
        switch HTTP2StreamEvent(event) {
        case .windowUpdated(let window):
            // The connection's window is topped up by the output; a stream still sending its request gets its own, until
            // the request is over the bound (then it may send no more than its window: the bytes are dropped anyway).
            if let (stream, size) = output.windowUpdated(window), gathering[stream]?.body.isTooLarge == false,
               let increment = gathering[stream]?.window.windowChanged(to: size) {
                output.sendWindowUpdate(stream, increment)
            }
        case .created(let created):
            openStreams.opened(created.streamID, channel: context.channel)
        case .closed(let closed):
            gathering[closed.streamID] = nil
            openStreams.closed(closed.streamID, channel: context.channel)
        case .other:
            context.fireUserInboundEventTriggered(event)
        }
    }

    /// NIO reports stream errors (it resets the stream) and connection errors (GOAWAY; the guard closes).
    package func errorCaught(context: ChannelHandlerContext, error: any Error) {}

    // MARK: - The answer

    /// The request's head is read by the client port's rules (`HTTP2RequestHeadReader`; NIO's own validation is off on
    /// this port as on that one): what RFC 9113 makes malformed resets the stream, what the doors refuse is a 400 (431).
    private func respond(_ id: HTTP2StreamID, _ stream: Gathering, context: ChannelHandlerContext) {
        let head: HTTPRequestHead
        switch HTTP2RequestHeadReader.read(stream.headers, endStream: stream.headersEndedStream, maxHeaderBytes: responder.context.maxHeaderBytes) {
        case .success(let read):
            head = read.head
        case .failure(let malformed) where malformed.answer == .reset:
            output.write(HTTP2Frame(streamID: id, payload: .rstStream(.protocolError)), promise: nil)
            output.flushSoon()
            return
        case .failure(let malformed):
            let refusal = LocalResponse.malformedRequest(malformed.reason, status: malformed.answer == .tooLarge ? .requestHeaderFieldsTooLarge : .badRequest)
            write(.http(status: refusal.status, headers: refusal.headers, body: refusal.body), on: id, isHEAD: false)
            return
        }
        let request = ExtAuthzResponder.Request(
            method: head.method, uri: head.uri, headers: head.headers, body: stream.body.bytes, bodyTooLarge: stream.body.isTooLarge, peerIP: peerIP,
            startedAt: stream.startedAt, isHTTP2: true)
        responder.respond(to: request, tokenMemory: tokenMemory, on: context.eventLoop).whenAnswered { answer in
            self.write(answer, on: id, isHEAD: head.method == .HEAD)
        }
    }

    /// - Parameter isHEAD: the answer to a HEAD has no body (its content-length says what a GET's would be).
    private func write(_ answer: ExtAuthzResponder.Answer, on id: HTTP2StreamID, isHEAD: Bool) {
        switch answer {
        case .grpc(let message, let status, let statusMessage):
            output.write(HTTP2Frame(streamID: id, payload: .headers(.init(headers: Self.grpcHead))), promise: nil)
            if let message {
                let framed = GRPCMessageFraming.frame(message, allocator: allocator)
                output.write(HTTP2Frame(streamID: id, payload: .data(.init(data: .byteBuffer(framed)))), promise: nil)
            }
            let trailers = status == 0
                ? Self.grpcOK : HPACKHeaders(httpHeaders: GRPCMessageFraming.trailers(status: status, message: statusMessage), normalizeHTTPHeaders: false)
            output.write(HTTP2Frame(streamID: id, payload: .headers(.init(headers: trailers, endStream: true))), promise: nil)
        case .http(let status, let headers, let body):
            var fields = HPACKHeaders()
            fields.reserveCapacity(headers.count + 2)
            fields.add(name: ":status", value: String(status.code))
            for (name, value) in headers {
                let lowered = HTTP2FieldName.lowercased(name)
                if ResponseFields.isWrittenOnHTTP2(lowered), lowered != "content-length" { fields.add(name: lowered, value: value) }
            }
            fields.add(name: "content-length", value: String(body.utf8.count))
            output.write(HTTP2Frame(streamID: id, payload: .headers(.init(headers: fields, endStream: body.isEmpty || isHEAD))), promise: nil)
            if !body.isEmpty && !isHEAD {
                var buffer = allocator.buffer(capacity: body.utf8.count)
                buffer.writeString(body)
                output.write(HTTP2Frame(streamID: id, payload: .data(.init(data: .byteBuffer(buffer), endStream: true))), promise: nil)
            }
        }
        output.flushSoon()
    }
}
