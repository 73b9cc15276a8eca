import Foundation
import Prometheus
import NIOCore
import NIOHTTP1

/// One client connection: parses its bytes (`HTTP1RequestParser`, no decoder handler in front),
/// decides each request, answers it locally or streams it to a pooled upstream connection and the
/// response back, with backpressure both ways (reads are manual).
final class ClientConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    /// Bytes after a protocol switch, handed to the tunnel that replaces this handler.
    typealias InboundOut = ByteBuffer
    /// Responses are written as bytes (`HTTPHeadWriter`, `ChunkedFraming`): no encoder handler.
    typealias OutboundOut = ByteBuffer

    enum State {
        case awaitingHead
        /// Waiting on a JWKS refetch for an unknown `kid`.
        case deciding(Exchange)
        /// A sign-out reading its (small) body, which may carry a refresh token for the provider.
        case readingSignOut(OwnEndpoint, Exchange, VerifiedIdentity)
        /// Rejected or answered locally; the answer waits for the request's end (or the read burst's end).
        case answering(Exchange, LocalResponse)
        case connecting(Exchange)
        case forwarding(Exchange)
        /// Answered before the request body ended: remaining body is ignored and the connection closes.
        case discarding
        /// The upstream answered 101: the tunnel is set up when that response's end arrives.
        case upgrading(Exchange)
        case tunnelling
    }


    private let handle: ServicesHandle
    /// Read from the handle at each request head: a reload applies to the next request.
    private(set) var services: ProxyServices
    let pool: UpstreamConnectionPool
    var state = State.awaitingHead
    var context: ChannelHandlerContext?
    var clientIP = "unknown"
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
    private var recentToken: RecentToken?

    init(handle: ServicesHandle, pool: UpstreamConnectionPool, maxHeaderBytes: Int) {
        self.handle = handle
        self.services = handle.services
        self.pool = pool
        self.parser = HTTP1RequestParser(maxHeaderBytes: maxHeaderBytes)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        clientIP = context.channel.remoteAddress?.ipAddress ?? "unknown"
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
        case .deciding, .connecting, .answering:
            break
        case .forwarding(let exchange):
            if let connection = exchange.connection { pool.discard(connection) }
        case .upgrading(let exchange):
            if let connection = exchange.connection { pool.discard(connection) }
        case .awaitingHead, .discarding, .tunnelling, .readingSignOut:
            break
        }
        state = .discarding
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        isInReadBurst = true
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
            receivedBody(buffer)
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
        switch state {
        case .forwarding(let exchange):
            exchange.connection?.channel.flush()
            if !exchange.requestEnded, exchange.connection?.channel.isWritable == true { context.read() }
        case .answering(let exchange, let response):
            // The request body goes on beyond this read: answer now and close rather than read it all.
            sendLocal(response, for: exchange, context: context)
        case .awaitingHead, .readingSignOut:
            readIfClientReads(context: context)
        case .deciding, .connecting, .discarding, .upgrading, .tunnelling:
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
            case .awaitingHead, .readingSignOut:
                context.read()
            case .deciding, .connecting, .answering, .discarding, .upgrading, .tunnelling:
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
        if let exchange = currentExchange, exchange.requestEnded {
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
        case .awaitingHead, .deciding, .readingSignOut, .answering, .connecting, .discarding, .tunnelling:
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

    /// The request being decided, forwarded or answered, if any.
    private var currentExchange: Exchange? {
        switch state {
        case .deciding(let exchange), .connecting(let exchange), .forwarding(let exchange), .answering(let exchange, _),
            .readingSignOut(_, let exchange, _):
            exchange
        case .awaitingHead, .discarding, .upgrading, .tunnelling:
            nil
        }
    }

    /// Whether a response has begun on the wire (an error answer cannot be put in the middle of it),
    /// or the connection is already closing (nobody would read one).
    private var isResponseInProgress: Bool {
        switch state {
        case .forwarding(let exchange): exchange.responseHeadSent
        case .upgrading, .tunnelling, .discarding: true
        case .awaitingHead, .deciding, .readingSignOut, .answering, .connecting: false
        }
    }

    // MARK: - Request parts

    private func receivedHead(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        headDeadline = nil
        guard case .awaitingHead = state else { return }
        services = handle.services
        let requestID = RequestID.acceptOrGenerate(head.headers.first(name: "x-request-id"))
        guard let target = PathNormalizer.normalize(head.uri), Self.hasValidHost(head) else {
            let exchange = Exchange(
                request: .init(head: head, target: NormalizedTarget.root, requestID: requestID, clientIP: clientIP,
                               scheme: services.scheme, isWebSocket: false),
                rule: RouteRule.defaultRule, token: nil, startedAt: .now())
            services.metrics.request(routeAuth: "none", outcome: .badRequest)
            var response = LocalResponse.plain(.badRequest, "bad request target or Host")
            response.closeConnection = true
            answer(exchange, response, context: context)
            return
        }
        let token = BearerToken.extract(
            from: head.headers, cookieName: services.verification.tokenCookie, headerName: services.verification.tokenHeader)
        if OwnEndpoint.isOwn(target.path) {
            startEndpoint(target.path, head: head, requestID: requestID, token: token, context: context)
            return
        }
        let rule = services.routes.match(method: head.method.rawValue, path: target.path)
        let exchange = Exchange(
            request: .init(head: head, target: target, requestID: requestID, clientIP: clientIP, scheme: services.scheme,
                           isWebSocket: Self.isWebSocketUpgrade(head)),
            rule: rule, token: token.presentedToken, startedAt: .now())
        let recent = RecentToken.identity(of: recentToken, for: exchange.token, services: services)
        exchange.presentsRecentToken = recent != nil
        let now = Int64(Date().timeIntervalSince1970)
        decided(services.gatekeeper.decide(head, path: target.path, rule: rule, token: token, now: now, recent: recent, on: context.eventLoop),
                exchange, context: context)
    }

    private func receivedBody(_ buffer: ByteBuffer) {
        switch state {
        case .deciding(let exchange), .connecting(let exchange):
            exchange.bufferedBody.append(buffer)
        case .forwarding(let exchange):
            exchange.connection?.writeBody(buffer)
            exchange.bodyForwarded = true
        case .readingSignOut(_, let exchange, _):
            exchange.bufferedBody.append(buffer)
            if exchange.bufferedBody.reduce(0, { $0 + $1.readableBytes }) > SignOutRequest.maxBodyBytes, let context {
                var response = LocalResponse.json(.payloadTooLarge, "{\"error\":\"invalid_request\",\"error_description\":\"body too large\"}")
                response.closeConnection = true
                sendLocal(response, for: exchange, context: context)
            }
        case .answering, .discarding, .awaitingHead, .upgrading, .tunnelling:
            break
        }
    }

    private func receivedEnd(context: ChannelHandlerContext) {
        switch state {
        case .deciding(let exchange), .connecting(let exchange):
            exchange.requestEnded = true
        case .forwarding(let exchange):
            exchange.requestEnded = true
            exchange.connection?.writeEnd()
            exchange.connection?.channel.flush()
        case .answering(let exchange, let response):
            exchange.requestEnded = true
            sendLocal(response, for: exchange, context: context)
        case .readingSignOut(let endpoint, let exchange, let identity):
            exchange.requestEnded = true
            signOut(endpoint, identity, exchange, context: context)
        case .discarding, .awaitingHead, .upgrading, .tunnelling:
            break
        }
    }

    // MARK: - Decisions

    func decided(_ decision: Gatekeeper.Decision, _ exchange: Exchange, context: ChannelHandlerContext) {
        if case .pending = decision {} else if exchange.rule.auth != .public {
            services.metrics.authDuration.recordNanoseconds((NIODeadline.now() - exchange.startedAt).nanoseconds)
        }
        switch decision {
        case .admit(let admission):
            if let endpoint = exchange.endpoint {
                answerEndpoint(endpoint, admission, exchange, context: context)
                return
            }
            exchange.upstreamHead = makeUpstreamHead(exchange, admission: admission, context: context)
            connect(exchange, context: context)
        case .reject(let failure):
            reject(exchange, failure, context: context)
        case .pending(let future):
            state = .deciding(exchange)
            future.assumeIsolated().whenComplete { result in
                guard case .deciding(let current) = self.state, current === exchange, let context = self.context else { return }
                switch result {
                case .success(let decision):
                    self.decided(decision, exchange, context: context)
                case .failure:
                    self.reject(exchange, AuthFailure(.keysUnavailable, "key refetch failed"), context: context)
                }
            }
        }
    }

    /// The head for the upstream. The same token as last time under the same configuration has the
    /// same identity fields (userinfo enrichment aside, which may change them): written as they were.
    private func makeUpstreamHead(_ exchange: Exchange, admission: Gatekeeper.Admission, context: ChannelHandlerContext)
        -> UpstreamRequestHead.Written
    {
        let reusable = services.gatekeeper.userinfo == nil
        let known = reusable && exchange.presentsRecentToken ? recentToken?.identityFields : nil
        let written = services.upstreamHead.make(exchange.request, admission: admission, allocator: context.channel.allocator, identityFields: known)
        if reusable, let fields = written.identityFields, case .verified(let identity) = admission, let token = exchange.token {
            recentToken = RecentToken(token: token, identity: identity, identityFields: fields, services: services)
        }
        return written
    }

    private func reject(_ exchange: Exchange, _ failure: AuthFailure, context: ChannelHandlerContext) {
        services.recordRejection(failure, of: exchange.request, routeAuth: exchange.routeAuth, token: exchange.token)
        let (status, headers, body) = AuthErrorResponse.make(
            failure, requestID: exchange.requestID, retryAfterSeconds: services.retryAfterSeconds)
        answer(exchange, LocalResponse(status: status, headers: headers, body: body), context: context)
    }

    /// Answers locally once the request has ended. Inside a read burst the end may still come in
    /// it, so the answer waits for the burst's end; otherwise (and then) it goes now, closing the
    /// connection if the request body is still unread.
    func answer(_ exchange: Exchange, _ response: LocalResponse, context: ChannelHandlerContext) {
        if exchange.requestEnded || !isInReadBurst {
            sendLocal(response, for: exchange, context: context)
        } else {
            state = .answering(exchange, response)
        }
    }

    func sendLocal(_ response: LocalResponse, for exchange: Exchange, context: ChannelHandlerContext) {
        let keepAlive = exchange.requestEnded && exchange.clientKeepAlive && !response.closeConnection && !isQuiescing
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

    // MARK: - Request checks

    /// HTTP/1.1 needs exactly one Host; any version may not send two (docs/security.md P18-19).
    static func hasValidHost(_ head: HTTPRequestHead) -> Bool {
        var count = 0
        for header in head.headers where header.name.utf8.count == 4 && IdentityHeaderNames.foldedHasPrefix(header.name, hostName) {
            count += 1
            if header.value.isEmpty || header.value.utf8.contains(where: { $0 == ASCIIByte.space || $0 == ASCIIByte.slash || $0 == UInt8(ascii: "@") }) {
                return false
            }
        }
        return count == 1 || (count == 0 && head.version == .http1_0)
    }

    private static let hostName = Array("host".utf8)

    private static func isWebSocketUpgrade(_ head: HTTPRequestHead) -> Bool {
        guard head.method == .GET, let upgrade = head.headers.first(name: "upgrade"), upgrade.lowercased() == "websocket" else {
            return false
        }
        return head.headers[canonicalForm: "connection"].contains { $0.lowercased() == "upgrade" }
    }
}

extension BearerToken {
    var presentedToken: Substring? {
        if case .present(let token) = self { return token }
        return nil
    }
}

extension NormalizedTarget {
    static let root = PathNormalizer.normalize("/")!  // safe: a constant valid target
}

extension ClientConnectionHandler: RemovableChannelHandler {}
