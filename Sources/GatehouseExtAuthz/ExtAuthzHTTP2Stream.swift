import NIOCore
import NIOHTTP1
import GatehouseSyntax
import GatehouseHTTP
import GatehouseAuth
import GatehouseExchange
import GatehouseProxy
import GatehouseVocabulary

/// One stream of the `[ext_authz]` port's HTTP/2 connection (`HTTP2ServerConnection`, as on the client port): its
/// HEADERS and DATA gathered (a CheckRequest is small: at most `ExtAuthzContext.maxCheckRequestBytes`), handed to
/// `ExtAuthzResponder` once the stream ends, and its answer written: HEADERS, DATA, trailers. A stream that has not
/// sent its whole request within `idle_timeout` of its HEADERS is reset (a slow or stalled caller holds no stream).
final class ExtAuthzHTTP2Stream: HTTP2ServerStreamHandling {
    /// What every stream of one connection shares.
    struct Shared {
        let responder: ExtAuthzResponder
        let tokenMemory = ConnectionTokenMemory()
        let peerIP: String
        let idleTimeout: TimeAmount
        let allocator: ByteBufferAllocator
    }

    private let id: Int32
    /// Strong: the connection drops the stream from its table once it is closed.
    private let connection: HTTP2ServerConnection
    private let shared: Shared
    /// The request's head, read by the client port's rules (`HTTP2RequestHeadReader`) when its HEADERS came.
    private var head: Result<HTTP2RequestHeadReader.Head, HTTP2RequestHeadReader.Malformed>?
    /// The DATA held to the head's `content-length`, as on the client port (RFC 9113 §8.1.1).
    private var declaredLength = HTTP2DeclaredLength(declared: nil)
    private var body = CheckRequestBody()
    private let startedAt = NIODeadline.now()
    /// The whole request came (or the stream was reset): no deadline left.
    private var isComplete = false
    private var isClosed = false

    /// Every gRPC answer's head, and the trailers of a successful call.
    private static let grpcHead: [NGHTTP2Session.OutboundField] = [(":status", "200", true), ("content-type", "application/grpc", true)]
    private static let grpcOK: HTTP2FieldList = [("grpc-status", "0")]

    init(id: Int32, connection: HTTP2ServerConnection, shared: Shared) {
        self.id = id
        self.connection = connection
        self.shared = shared
    }

    func received(_ part: consuming HTTP2StreamPart) {
        guard !isComplete else { return }
        // No `where` on the case that binds the block: the binding would be a copy, and the reader, which takes the
        // block's strings, would copy the whole block.
        switch consume part {
        case .fields(let block, let endStream):
            guard head == nil else {
                // A trailer section ends the request; its fields mean nothing to a Check.
                guard declaredLength.received(0, endStream: true) else { return resetMalformed() }
                return respond()
            }
            let read = HTTP2RequestHeadReader.read(fields: consume block, endStream: endStream, maxHeaderBytes: shared.responder.context.maxHeaderBytes)
            head = read
            if case .success(let head) = read { declaredLength = HTTP2DeclaredLength(declared: head.contentLength) }
            if endStream {
                guard declaredLength.received(0, endStream: true) else { return resetMalformed() }
                respond()
            } else {
                connection.wake(at: startedAt + shared.idleTimeout)
            }
        case .data(var bytes, let endStream):
            let count = bytes.readableBytes
            guard declaredLength.received(count, endStream: endStream) else { return resetMalformed() }
            body.append(&bytes)
            // Past the bound the window stays shut: the caller may send no more than it, the bytes are dropped anyway.
            if count > 0 && !body.isTooLarge { connection.consumed(id, bytes: count) }
            if endStream { respond() }
        }
    }

    func readBegan() {}
    func readComplete() {}
    func connectionBecameWritable() {}
    /// A Check's answer is not counted (`queue(counted: false)`), nor waited for.
    func wrote(_ bytes: Int) {}
    func endWentOut() {}

    func closed() {
        isClosed = true
        isComplete = true
    }

    func deadlinePassed(now: NIODeadline) -> NIODeadline? {
        guard !isComplete else { return nil }
        let deadline = startedAt + shared.idleTimeout
        guard deadline <= now else { return deadline }
        isComplete = true
        connection.reset(id, code: HTTP2ConnectionError.cancel)
        connection.flushSoon()
        return nil
    }

    /// A malformed request (its head, or DATA that does not add up to its `content-length`): the stream is reset,
    /// never answered.
    private func resetMalformed() {
        isComplete = true
        connection.reset(id, code: HTTP2ConnectionError.protocolError)
        connection.flushSoon()
    }

    /// The whole request came: what RFC 9113 makes malformed resets the stream, what the doors refuse is a 400 (431),
    /// the rest is a Check.
    private func respond() {
        isComplete = true
        let head: HTTPRequestHead
        switch self.head {
        case .success(let read)?:
            head = read.head
        case .failure(let malformed)? where malformed.answer == .reset:
            return resetMalformed()
        case nil:
            return resetMalformed()  // no HEADERS came: nghttp2 hands a stream nothing before them
        case .failure(let malformed)?:
            let refusal = LocalResponse.malformedRequest(malformed.reason, status: malformed.answer == .tooLarge ? .requestHeaderFieldsTooLarge : .badRequest)
            write(.http(status: refusal.status, headers: refusal.headers, body: refusal.body), isHEAD: false)
            return
        }
        let request = ExtAuthzResponder.Request(
            method: head.method, uri: head.uri, headers: head.headers, body: body.bytes, bodyTooLarge: body.isTooLarge, peerIP: shared.peerIP,
            startedAt: startedAt, isHTTP2: true)
        shared.responder.respond(to: request, tokenMemory: shared.tokenMemory, on: connection.eventLoop).whenReady { answer in
            self.write(answer, isHEAD: head.method == .HEAD)
        }
    }

    /// - Parameter isHEAD: the answer to a HEAD has no body (its content-length says what a GET's would be).
    private func write(_ answer: ExtAuthzResponder.Answer, isHEAD: Bool) {
        guard !isClosed else { return }
        switch answer {
        case .grpc(let message, let status, let statusMessage):
            connection.respond(id, Self.grpcHead, hasBody: true)
            if let message { connection.queue(id, GRPCMessageFraming.frame(message, allocator: shared.allocator), counted: false) }
            let trailers = status == 0
                ? Self.grpcOK : GRPCMessageFraming.trailers(status: status, message: statusMessage).http2Fields
            connection.queueEnd(id, trailers: trailers)
        case .http(let status, let headers, let body):
            var fields: [NGHTTP2Session.OutboundField] = [(":status", String(status.code), true)]
            fields.reserveCapacity(headers.count + 2)
            for (name, value) in headers {
                let lowered = HTTP2FieldName.lowercased(name)
                if ResponseFields.isWrittenOnHTTP2(lowered), lowered != "content-length" { fields.append((lowered, value, true)) }
            }
            fields.append(("content-length", String(body.utf8.count), true))
            let hasBody = !body.isEmpty && !isHEAD
            connection.respond(id, fields, hasBody: hasBody)
            if hasBody {
                var buffer = shared.allocator.buffer(capacity: body.utf8.count)
                buffer.writeString(body)
                connection.queue(id, buffer, counted: false)
                connection.queueEnd(id, trailers: nil)
            }
        }
        connection.flushSoon()
    }
}
