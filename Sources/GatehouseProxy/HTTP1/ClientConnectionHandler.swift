import Foundation
import Prometheus
import NIOCore
import NIOHTTP1
import GatehouseHTTP
import GatehouseAuth
import GatehouseExchange

/// The HTTP/1.1 front door: one client connection. It parses its bytes (`HTTP1RequestParser`, no
/// decoder handler in front), queues pipelined requests, and hands each request to a `StreamDriver`, the
/// driver every door shares (the core's decision, the upstream leg, the answer); as that driver's
/// `StreamTransport` it writes the answers as HTTP/1.1 bytes (`HTTPHeadWriter`, `ChunkedFraming`), with
/// backpressure both ways (reads are manual).
final class ClientConnectionHandler: ChannelInboundHandler, DeferredFlush {
    typealias InboundIn = ByteBuffer
    /// Bytes after a protocol switch, handed to the tunnel that replaces this handler.
    typealias InboundOut = ByteBuffer
    /// Responses are written as bytes (`HTTPHeadWriter`, `ChunkedFraming`): no encoder handler.
    typealias OutboundOut = ByteBuffer

    enum State {
        case awaitingHead
        /// The connection's current request, with its driver: decided, forwarded, answered.
        case exchanging(StreamDriver)
        /// Answered before the request body ended, or given up: nothing more is read, and the connection
        /// closes once what was written is sent.
        case discarding
        /// The upstream switched protocols (a WebSocket): bytes are relayed by the tunnel.
        case tunnelling
    }

    /// Who the connection's requests are judged and forwarded for (its peer, its last verified token).
    let connection: StreamDriver.Connection
    let eventLoop: any EventLoop
    var state = State.awaitingHead
    var context: ChannelHandlerContext?
    /// A keep-alive connection must send its next request head by then (slowloris); a closing one
    /// must have taken its last response by then (a client that stops reading is let go).
    var headDeadline: NIODeadline?
    /// One timer per connection for the head deadline and the driver's, re-armed lazily when it
    /// fires: a request costs no timer scheduling or cancelling.
    var watchdog = WakeTimer()
    /// Between a read and its read-complete: a local answer may wait for the request's end until then.
    private var isInReadBurst = false
    /// A read was asked for and nothing has arrived since: NIO still wants the socket's bytes, asking again would
    /// only walk the pipeline.
    private var isReadAsked = false
    /// The client shut its sending side: finish the request in flight, then close.
    private var clientHalfClosed = false
    /// Graceful stop: close once the response in flight is done, or now if there is none.
    private(set) var isQuiescing = false
    /// Parts of pipelined requests that arrived while an earlier one was still being answered.
    private var pipelined = CircularBuffer<HTTPServerRequestPart>()
    private var isDrainingPipelined = false
    /// Parts (a head, body pieces, an end) of requests waiting behind the one being answered.
    static let maxPipelinedParts = 1024
    /// The parser refused bytes after a request that is still being answered: that request (and
    /// the pipelined ones before the refused bytes) is answered first, then this status, then close.
    private var refusedAfterPending: HTTPResponseStatus?
    private var parser: HTTP1RequestParser
    /// Bytes read but not yet parsed: a head still arriving, or what follows a protocol switch.
    var unparsed = ByteBuffer()
    /// The parser refused the client's bytes: nothing more is parsed on this connection.
    private var parserFailed = false
    /// How the current answer is written (`ClientConnectionHandler+Transport`).
    var response = HTTP1ResponseFraming()
    /// The response heads' buffer, used again once each head is sent.
    var headBuffer = ReusedBuffer()
    /// The current answer's head, written but not yet handed to NIO: the body bytes that follow it in the same read go
    /// in the same buffer (`write`), up to `maxHeldBytes`; handed on at the flush.
    var heldHead: ByteBuffer?
    static let maxHeldBytes = 8 * 1024
    /// The channel's allocator, read once: each read of `channel.allocator` takes NIO's lock and a reference.
    private(set) var allocator = ByteBufferAllocator()
    /// The channel's writability as its changes were reported (`channelWritabilityChanged`): read without a pass
    /// through NIO's channel (a reference each time) before every read asked for and by the driver.
    private(set) var isWritable = true
    /// A flush waits for the event loop's tick to end (`LoopFlushBatch`).
    var isFlushDeferred = false
    /// The event loop's batch, looked up at the first flush (on the loop) and kept: the connection never leaves it.
    lazy var flushBatch = LoopFlushBatch.of(eventLoop)

    init(connection: StreamDriver.Connection, eventLoop: any EventLoop, maxHeaderBytes: Int) {
        self.connection = connection
        self.eventLoop = eventLoop
        self.parser = HTTP1RequestParser(maxHeaderBytes: maxHeaderBytes)
    }

    var idleTimeout: TimeAmount { connection.handle.idleTimeout }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        allocator = context.channel.allocator
        isWritable = context.channel.isWritable  // added after a protocol's selection, to a channel already in use
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        watchdog.cancel()
        writeHeldHead(context: context)  // its flush may be waiting for the tick's end (`flushDeferred`)
        self.context = nil
        isWritable = false
    }

    func channelActive(context: ChannelHandlerContext) {
        awaitNextRequest(context: context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        watchdog.cancel()
        if case .exchanging(let driver) = state { driver.transportClosed() }
        state = .discarding
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        isInReadBurst = true
        isReadAsked = false
        if case .exchanging(let driver) = state { driver.readBegan() }
        if case .discarding = state { return }
        var bytes = unwrapInboundIn(data)
        if unparsed.readableBytes == 0 {
            unparsed = bytes
        } else {
            unparsed.writeBuffer(&bytes)
        }
        parseUnparsed(context: context)
    }

    /// Hands every complete part of what was read to the request logic; a refusal ends parsing.
    private func parseUnparsed(context: ChannelHandlerContext) {
        guard !parserFailed else { return }
        do {
            while let part = try parser.nextPart(from: &unparsed) {
                receivedDecoded(part, context: context)
                if case .discarding = state { break }
                if case .tunnelling = state { return }
            }
        } catch {
            parserFailed = true
            refuseUnparsable(error, context: context)
        }
        if case .discarding = state {
            unparsed = ByteBuffer()
        } else if unparsed.readableBytes == 0 {
            unparsed = ByteBuffer()  // no reference kept to the read's storage (body slices may hold it)
        } else if unparsed.readerIndex > 4096 {
            unparsed.discardReadBytes()
        }
    }

    private func receivedDecoded(_ part: HTTPServerRequestPart, context: ChannelHandlerContext) {
        if !pipelined.isEmpty || isNextRequest(part) {
            // No read is asked for while a request is answered, so this holds at most one read's
            // worth; a client pipelining more than that is cut off rather than buffered.
            guard pipelined.count < Self.maxPipelinedParts else {
                pipelined.removeAll()
                context.close(promise: nil)  // channelInactive gives up an upstream leg in use
                return
            }
            pipelined.append(part)
            return
        }
        receivedPart(part, context: context)
    }

    private func receivedPart(_ part: HTTPServerRequestPart, context: ChannelHandlerContext) {
        switch part {
        case .head(let head):
            guard case .awaitingHead = state else { return }
            headDeadline = nil
            let driver = StreamDriver(connection: connection, transport: self)
            state = .exchanging(driver)
            response = HTTP1ResponseFraming()
            driver.readBegan()
            driver.receivedHead(head)
        case .body(let buffer):
            if case .exchanging(let driver) = state { driver.receivedBody(buffer) }
        case .end(let trailers):
            // Chunked trailers: sanitized by the driver; only an HTTP/2 upstream gets them (reference §5).
            if case .exchanging(let driver) = state { driver.receivedEnd(trailers: trailers) }
        }
    }

    /// A head that arrives while the previous request is still being answered (pipelining).
    private func isNextRequest(_ part: HTTPServerRequestPart) -> Bool {
        guard case .head = part else { return false }
        if case .awaitingHead = state { return false }
        return true
    }

    /// Handles pipelined parts in order until one has to wait again. Not re-entered: an answer
    /// given while draining resumes the loop instead of recursing (a read can hold thousands).
    private func drainPipelined(context: ChannelHandlerContext) {
        guard !isDrainingPipelined, !pipelined.isEmpty else { return }
        isDrainingPipelined = true
        let wasInReadBurst = isInReadBurst
        isInReadBurst = true  // the queued parts are one burst: an answer may wait for its request's end
        while let part = pipelined.first {
            if case .discarding = state {
                pipelined.removeAll()
                break
            }
            if isNextRequest(part) { break }
            pipelined.removeFirst()
            receivedPart(part, context: context)
        }
        isInReadBurst = wasInReadBurst
        isDrainingPipelined = false
        if !wasInReadBurst { readBurstEnded(context: context) }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        isInReadBurst = false
        isReadAsked = false
        readBurstEnded(context: context)
        // This handler is the pipeline's last (TLS, when there is one, is before it): the tail does nothing with a read's
        // end, so it goes no further, one pass through the pipeline fewer per request. After a switch to a tunnel the
        // tunnel's handler follows (until this one has left).
        if case .tunnelling = state { context.fireChannelReadComplete() }
    }

    private func readBurstEnded(context: ChannelHandlerContext) {
        switch state {
        case .exchanging(let driver):
            // An answer still waiting goes now; the driver asks for more of the request if it takes it.
            driver.readComplete()
            readAheadOfAnswer(context: context)
        case .awaitingHead:
            readIfClientReads(context: context)
        case .discarding, .tunnelling:
            break
        }
    }

    /// Asks for the next request only while the client takes our answers: one that sends requests
    /// without reading responses would otherwise pile answers up in memory.
    private func readIfClientReads(context: ChannelHandlerContext) {
        if isWritable { askForRead(context: context) }
    }

    /// The request in hand is read whole and nothing waits behind it: the socket stays asked for its next bytes while
    /// the answer is made, so NIO keeps its read interest rather than dropping it now and re-arming it after the
    /// answer (two `epoll_ctl` per request). What a pipelining client sends meanwhile waits in `pipelined`, and no
    /// further read is asked for until it is answered: still at most one read's worth ahead.
    private func readAheadOfAnswer(context: ChannelHandlerContext) {
        guard case .exchanging(let driver) = state, driver.requestEnded, pipelined.isEmpty, unparsed.readableBytes == 0,
            !parserFailed, !clientHalfClosed
        else { return }
        readIfClientReads(context: context)
    }

    /// Every read the door asks for: once per delivery (a second ask before the bytes come changes nothing).
    func askForRead(context: ChannelHandlerContext) {
        guard !isReadAsked else { return }
        isReadAsked = true
        context.read()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        isWritable = context.channel.isWritable
        if isWritable {
            switch state {
            case .exchanging(let driver): driver.transportBecameWritable()
            case .awaitingHead: askForRead(context: context)
            case .discarding, .tunnelling: break
            }
        }
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed {
            isReadAsked = false
            if !parserFailed, parser.isMidMessage(unparsed: unparsed) {  // the request was cut short
                parserFailed = true
                refuseUnparsable(.invalidEOFState, context: context)
            }
            clientHalfClosed = true
            if case .awaitingHead = state, pipelined.isEmpty { context.close(promise: nil) }
            return
        }
        if event is ChannelShouldQuiesceEvent {
            isQuiescing = true
            if case .awaitingHead = state, pipelined.isEmpty { context.close(promise: nil) }
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        abandon(context: context)
    }

    /// Bytes the parser refused: 431 for an oversized head, 400 for anything else (smuggling
    /// attempts, bad framing, control characters), then the connection closes.
    /// Refused bytes that follow a complete request still being answered wait for that answer (a
    /// 400 in its place would be taken for it); refused bytes inside the current request end it.
    private func refuseUnparsable(_ parserError: HTTPParserError, context: ChannelHandlerContext) {
        let status: HTTPResponseStatus = parserError == .headerOverflow ? .requestHeaderFieldsTooLarge : .badRequest
        if case .exchanging(let driver) = state, driver.requestEnded {
            refusedAfterPending = status
            return
        }
        refuse(status, context: context)
    }

    /// Answers a refused request (unless a response is already on the wire) and closes.
    private func refuse(_ status: HTTPResponseStatus, context: ChannelHandlerContext) {
        writeHeldHead(context: context)
        if !isResponseInProgress, context.channel.isActive {
            context.write(wrapOutboundOut(HTTPHeadWriter.refusal(status, allocator: allocator)), promise: nil)
        }
        abandon(context: context)
    }

    /// Gives up the connection: an upstream leg in use is given up (it may hold half a request), nothing
    /// pending may go on, and the client is closed once what was written is sent.
    private func abandon(context: ChannelHandlerContext) {
        if case .exchanging(let driver) = state { driver.transportClosed() }
        closeAfterWrites(context: context)
    }

    /// Nothing more is read or answered; the connection closes once what was written is sent, or
    /// after the idle timeout if the client stops reading it.
    func closeAfterWrites(context: ChannelHandlerContext) {
        writeHeldHead(context: context)
        state = .discarding
        pipelined.removeAll()
        let deadline = NIODeadline.now() + idleTimeout
        headDeadline = deadline
        armWatchdog(for: deadline, context: context)
        context.writeAndFlush(wrapOutboundOut(allocator.buffer(capacity: 0))).assumeIsolated()
            .whenComplete { _ in context.close(promise: nil) }
    }

    /// Whether a response has begun on the wire (an error answer cannot be put in the middle of it),
    /// or the connection is already closing (nobody would read one).
    private var isResponseInProgress: Bool {
        switch state {
        case .exchanging: response.started
        case .tunnelling, .discarding: true
        case .awaitingHead: false
        }
    }

    /// Sends what was written of the response; then either takes the next request or closes.
    func finishResponse(keepAlive: Bool, context: ChannelHandlerContext) {
        // A half-closed client still gets the answers to the requests it pipelined before closing.
        if keepAlive && !isQuiescing && !(clientHalfClosed && pipelined.isEmpty) {
            flushWrites()
            awaitNextRequest(context: context)
        } else {
            closeAfterWrites(context: context)
        }
    }

    private func awaitNextRequest(context: ChannelHandlerContext) {
        state = .awaitingHead
        drainPipelined(context: context)
        guard case .awaitingHead = state, pipelined.isEmpty else { return }
        if let status = refusedAfterPending {
            refuse(status, context: context)
            return
        }
        let deadline = NIODeadline.now() + idleTimeout
        headDeadline = deadline
        armWatchdog(for: deadline, context: context)
        readIfClientReads(context: context)
    }
}

extension ClientConnectionHandler: RemovableChannelHandler {}
