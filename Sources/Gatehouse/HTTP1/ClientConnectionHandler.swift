import Foundation
import Prometheus
import NIOCore
import NIOHTTP1

/// The HTTP/1.1 front door: one client connection. It parses its bytes (`HTTP1RequestParser`, no
/// decoder handler in front), hands each request to the request core (`ExchangeStateMachine`),
/// writes the core's answers as bytes, and streams an admitted request to a pooled upstream
/// connection and the response back, with backpressure both ways (reads are manual).
final class ClientConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    /// Bytes after a protocol switch, handed to the tunnel that replaces this handler.
    typealias InboundOut = ByteBuffer
    /// Responses are written as bytes (`HTTPHeadWriter`, `ChunkedFraming`): no encoder handler.
    typealias OutboundOut = ByteBuffer

    enum State {
        case awaitingHead
        /// The core has the request: intake, decision, a local answer (waiting for the request's
        /// end or the read burst's end), a sign-out.
        case core
        case connecting(HTTP1Forward)
        case forwarding(HTTP1Forward)
        /// Answered before the request body ended: remaining body is ignored and the connection closes.
        case discarding
        /// The upstream answered 101: the tunnel is set up when that response's end arrives.
        case upgrading(HTTP1Forward)
        case tunnelling
    }


    private let handle: ServicesHandle
    /// Read from the handle at each request head: a reload applies to the next request.
    private(set) var services: ProxyServices
    let pool: UpstreamConnectionPool
    var state = State.awaitingHead
    var context: ChannelHandlerContext?
    /// Set when the handler is added: its address, and its TLS client certificate once asked.
    var peer: ClientPeer?
    /// A keep-alive connection must send its next request head by then (slowloris); a closing one
    /// must have taken its last response by then (a client that stops reading is let go).
    var headDeadline: NIODeadline?
    /// One timer per connection for the head and response deadlines, re-armed lazily when it
    /// fires: a request costs no timer scheduling or cancelling.
    var watchdog: Scheduled<Void>?
    var watchdogFiresAt: NIODeadline?
    /// When the client's last read burst ended: a request body that stops arriving for
    /// `idle_timeout` while the upstream could take more frees the connection (slowloris).
    var lastClientRead = NIODeadline.now()
    /// Between a read and its read-complete: a local answer may wait for the request's end until then.
    private var isInReadBurst = false
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
    /// The token of the last verified request, for a client that repeats it.
    let tokenMemory = ConnectionTokenMemory()
    /// The request in hand until it is forwarded (and again for a 502/504 answer).
    var core: ExchangeStateMachine

    init(handle: ServicesHandle, pool: UpstreamConnectionPool, maxHeaderBytes: Int) {
        self.handle = handle
        self.services = handle.services
        self.pool = pool
        self.parser = HTTP1RequestParser(maxHeaderBytes: maxHeaderBytes)
        self.core = ExchangeStateMachine(speaksGRPC: false, forwardsAtReadEnd: false)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        peer = ClientPeer(channel: context.channel)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        watchdog?.cancel()
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        awaitNextRequest(context: context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        watchdog?.cancel()
        switch state {
        case .core, .connecting:
            break
        case .forwarding(let exchange):
            if let connection = exchange.connection { pool.discard(connection) }
        case .upgrading(let exchange):
            if let connection = exchange.connection { pool.discard(connection) }
        case .awaitingHead, .discarding, .tunnelling:
            break
        }
        state = .discarding
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        isInReadBurst = true
        core.readBegan()
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
                context.close(promise: nil)  // channelInactive frees an upstream connection in use
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
            receivedHead(head, context: context)
        case .body(let buffer):
            receivedBody(buffer, context: context)
        case .end:
            receivedEnd(context: context)
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
        lastClientRead = .now()  // the queued parts count as just read: a body they start has its full idle time
        let wasInReadBurst = isInReadBurst
        isInReadBurst = true  // the queued parts are one burst: an answer may wait for its request's end
        core.readBegan()
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
        lastClientRead = .now()
        readBurstEnded(context: context)
        context.fireChannelReadComplete()
    }

    private func readBurstEnded(context: ChannelHandlerContext) {
        // An answer still waiting goes now (its request body goes on beyond this read: it is
        // answered and the connection closed rather than read it all); an admitted request is forwarded.
        let action = core.readEnded()
        if case .core = state { perform(action, context: context) }
        switch state {
        case .forwarding(let exchange):
            exchange.connection?.channel.flush()
            if !exchange.requestEnded, exchange.connection?.channel.isWritable == true { context.read() }
        case .awaitingHead:
            readIfClientReads(context: context)
        case .core where core.isReadingBody:
            readIfClientReads(context: context)
        case .core, .connecting, .discarding, .upgrading, .tunnelling:
            break
        }
    }

    /// Asks for the next request only while the client takes our answers: one that sends requests
    /// without reading responses would otherwise pile answers up in memory.
    private func readIfClientReads(context: ChannelHandlerContext) {
        if context.channel.isWritable { context.read() }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            switch state {
            case .forwarding(let exchange):
                exchange.connection?.channel.read()
            case .awaitingHead:
                context.read()
            case .core where core.isReadingBody:
                context.read()
            case .core, .connecting, .discarding, .upgrading, .tunnelling:
                break
            }
        }
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed {
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
        if hasRequestInHand && core.requestEnded {
            refusedAfterPending = status
            return
        }
        refuse(status, context: context)
    }

    /// Answers a refused request (unless a response is already on the wire) and closes.
    private func refuse(_ status: HTTPResponseStatus, context: ChannelHandlerContext) {
        if !isResponseInProgress, context.channel.isActive {
            context.write(wrapOutboundOut(HTTPHeadWriter.refusal(status, allocator: context.channel.allocator)), promise: nil)
        }
        abandon(context: context)
    }

    /// Gives up the connection: an upstream connection in use is closed (it may hold half a
    /// request), nothing pending may go on, and the client is closed once what was written is sent.
    private func abandon(context: ChannelHandlerContext) {
        switch state {
        case .forwarding(let exchange), .upgrading(let exchange):
            if let connection = exchange.connection {
                exchange.connection = nil
                pool.discard(connection)
            }
        case .awaitingHead, .core, .connecting, .discarding, .tunnelling:
            break
        }
        closeAfterWrites(context: context)
    }

    /// Nothing more is read or answered; the connection closes once what was written is sent, or
    /// after the idle timeout if the client stops reading it.
    private func closeAfterWrites(context: ChannelHandlerContext) {
        state = .discarding
        pipelined.removeAll()
        let deadline = NIODeadline.now() + services.idleTimeout
        headDeadline = deadline
        armWatchdog(for: deadline, context: context)
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(capacity: 0))).assumeIsolated()
            .whenComplete { _ in context.close(promise: nil) }
    }

    /// Whether a request is being decided, forwarded or answered.
    private var hasRequestInHand: Bool {
        switch state {
        case .core, .connecting, .forwarding: true
        case .awaitingHead, .discarding, .upgrading, .tunnelling: false
        }
    }

    /// Whether a response has begun on the wire (an error answer cannot be put in the middle of it),
    /// or the connection is already closing (nobody would read one).
    private var isResponseInProgress: Bool {
        switch state {
        case .forwarding(let exchange): exchange.responseHeadSent
        case .upgrading, .tunnelling, .discarding: true
        case .awaitingHead, .core, .connecting: false
        }
    }

    // MARK: - Request parts

    private func receivedHead(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        headDeadline = nil
        guard case .awaitingHead = state else { return }
        services = handle.services
        state = .core
        perform(core.receivedHead(
            head, clientIP: peer?.ip ?? "unknown", certificateThumbprint: peer?.certificateThumbprint, services: services,
            recent: tokenMemory.recent, now: .now()), context: context)
    }

    private func receivedBody(_ buffer: ByteBuffer, context: ChannelHandlerContext) {
        switch state {
        case .core:
            perform(core.receivedBody(buffer), context: context)
        case .connecting(let exchange):
            exchange.bufferedBody.append(buffer)
        case .forwarding(let exchange):
            exchange.connection?.writeBody(buffer)
            exchange.bodyForwarded = true
        case .discarding, .awaitingHead, .upgrading, .tunnelling:
            break
        }
    }

    private func receivedEnd(context: ChannelHandlerContext) {
        let action = core.receivedEnd()
        switch state {
        case .core:
            perform(action, context: context)
        case .connecting(let exchange):
            exchange.requestEnded = true
        case .forwarding(let exchange):
            exchange.requestEnded = true
            exchange.connection?.writeEnd()
            exchange.connection?.channel.flush()
        case .discarding, .awaitingHead, .upgrading, .tunnelling:
            break
        }
    }

    // MARK: - The core's actions

    func perform(_ action: ExchangeStateMachine.Action, context: ChannelHandlerContext) {
        performRecords()
        switch action {
        case .none:
            break
        case .decide, .signOut, .awaitDecision, .awaitAnswer:
            // A sign-out's body has been read: the store's and the provider's answers are not the client's to hurry.
            switch action {
            case .signOut, .awaitAnswer: headDeadline = nil
            default: break
            }
            performDecisionAction(action)
        case .readBody:
            // The body must arrive within the same time a request head must (slowloris).
            let deadline = NIODeadline.now() + services.idleTimeout
            headDeadline = deadline
            armWatchdog(for: deadline, context: context)
            context.read()
        case .send(let response):
            sendLocal(response, context: context)
        case .retry:
            // The same request on a new upstream connection (the core's rule said it may go again).
            if case .forwarding(let exchange) = state { connect(exchange, context: context) }
        case .forward(let admission, let body):
            guard let admitted = core.exchange else { return }
            let exchange = HTTP1Forward(admitted, bufferedBody: body, requestEnded: core.requestEnded)
            exchange.upstreamHead = makeUpstreamHead(admitted, admission: admission, context: context)
            connect(exchange, context: context)
        }
    }

    /// The head for the upstream. The same token as last time under the same configuration has the
    /// same identity fields (userinfo enrichment aside, which may change them): written as they were.
    private func makeUpstreamHead(_ admitted: ExchangeRequest, admission: Gatekeeper.Admission, context: ChannelHandlerContext)
        -> UpstreamRequestHead.Written
    {
        let written = admitted.services.upstreamHead.make(
            admitted.request, admission: admission, allocator: context.channel.allocator, identityFields: tokenMemory.identityFields(for: admitted))
        if let fields = written.identityFields, case .verified(let identity) = admission {
            tokenMemory.remember(admitted, identity: identity, identityFields: fields)
        }
        return written
    }

    /// A local answer, framed for the client's version; the connection closes after it when the
    /// request body was left unread, the answer asks for it, or the client or a graceful stop does.
    private func sendLocal(_ response: LocalResponse, context: ChannelHandlerContext) {
        guard let exchange = core.exchange else { return }
        let keepAlive = core.requestEnded && exchange.head.clientKeepAlive && !response.closeConnection && !isQuiescing
        var bytes = HTTPHeadWriter.localResponseHead(
            status: response.status, version: exchange.head.version, headers: response.headers,
            contentLength: response.body.utf8.count, requestID: exchange.requestID, keepAlive: keepAlive,
            allocator: context.channel.allocator)
        if !exchange.isHEAD { bytes.writeString(response.body) }
        context.write(wrapOutboundOut(bytes), promise: nil)
        finishResponse(keepAlive: keepAlive, context: context)
    }

    /// Sends what was written of the response; then either takes the next request or closes.
    func finishResponse(keepAlive: Bool, context: ChannelHandlerContext) {
        // A half-closed client still gets the answers to the requests it pipelined before closing.
        if keepAlive && !isQuiescing && !(clientHalfClosed && pipelined.isEmpty) {
            context.flush()
            awaitNextRequest(context: context)
        } else {
            closeAfterWrites(context: context)
        }
    }

    private func awaitNextRequest(context: ChannelHandlerContext) {
        state = .awaitingHead
        core.reset()
        drainPipelined(context: context)
        guard case .awaitingHead = state, pipelined.isEmpty else { return }
        if let status = refusedAfterPending {
            refuse(status, context: context)
            return
        }
        let deadline = NIODeadline.now() + services.idleTimeout
        headDeadline = deadline
        armWatchdog(for: deadline, context: context)
        readIfClientReads(context: context)
    }
}

extension ClientConnectionHandler: RemovableChannelHandler {}

extension ClientConnectionHandler: ExchangeDriving {
    var coreHasRequest: Bool {
        guard case .core = state else { return false }
        return context != nil
    }

    var coreEventLoop: any EventLoop { pool.eventLoop }

    func performCoreAction(_ action: ExchangeStateMachine.Action) {
        guard let context else { return }
        perform(action, context: context)
    }
}
