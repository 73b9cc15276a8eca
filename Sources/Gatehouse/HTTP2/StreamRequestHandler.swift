import Prometheus
import Foundation
import NIOCore
import NIOHTTP1

/// One HTTP/2 stream: one request, judged by the same gatekeeper as an HTTP/1.1 request (routes,
/// token, verification, revocation, requirements, failure log, metrics), then answered here or
/// forwarded to the upstream with the identity headers. gRPC calls are refused in gRPC's form.
/// A stream's failure never touches the other streams of its connection.
///
/// With an HTTP/2 upstream it also serves HTTP/1.1 client connections (behind NIO's HTTP/1
/// codec), one request after the other (`keepsConnection`): requests in parts are what both
/// protocols share once framed.
final class StreamRequestHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    enum State {
        case awaitingHead
        /// Waiting on the gatekeeper (a JWKS refetch, userinfo) or on a sign-out's answer.
        case deciding
        /// A sign-out reading its small body.
        case readingSignOut(OwnEndpoint, VerifiedIdentity)
        /// Admitted; the upstream leg is opened once the read that carried the head is over
        /// (so a request that ended with its HEADERS frame is sent without a body).
        case admitted(Gatekeeper.Admission)
        case connecting
        case forwarding(any UpstreamLeg)
        /// Answered locally; the answer waits for the request's end until the read that carried
        /// the head is over (a request whose body goes on is answered then, and closed).
        case answering(LocalResponse, grpcMessage: String?)
        case done
    }

    private let handle: ServicesHandle
    let upstream: UpstreamLegFactory
    /// The connection's last verified token (`RecentToken`), shared with its other streams.
    private let tokenMemory: NIOLoopBound<ConnectionTokenMemory>
    private let clientIP: String
    var services: ProxyServices
    var state = State.awaitingHead
    var context: ChannelHandlerContext?

    var request: UpstreamRequestHead.Request?
    var routeAuth = "none"
    var token: Substring?
    var isGRPC = false
    /// The method on the wire: `/.gatehouse/check` judges another (the described request's), but its
    /// answer is framed by this one (a HEAD gets no body).
    var isHEAD = false
    var startedAt = NIODeadline.now()
    var bufferedBody: [ByteBuffer] = []
    var bufferedBytes = 0
    var requestEnded = false
    var requestTrailers: HTTPHeaders?
    var responseHeadSent = false
    var hasRetried = false
    var bodyForwarded = false
    /// What a refused stream is sent again with, once, while nothing of it can have been processed.
    var retryAdmission: Gatekeeper.Admission?
    /// The upstream's response head must arrive by then (`[upstream] timeout`); a stream that
    /// then flows (gRPC streaming) is bounded by `idle_timeout` between bytes instead.
    var watchdog: Scheduled<Void>?
    /// Between a read and its read-complete: a local answer may wait for the request's end until then.
    private var isInRead = false
    var lastProgress = NIODeadline.now()

    /// An HTTP/1.1 connection serving requests one after the other, rather than one HTTP/2 stream.
    let keepsConnection: Bool

    init(
        handle: ServicesHandle, upstream: UpstreamLegFactory, clientIP: String, tokenMemory: NIOLoopBound<ConnectionTokenMemory>,
        keepsConnection: Bool = false
    ) {
        self.handle = handle
        self.tokenMemory = tokenMemory
        self.upstream = upstream
        self.clientIP = clientIP
        self.keepsConnection = keepsConnection
        self.services = handle.services
    }

    /// The response version: HTTP/2 streams ignore it; an HTTP/1.x client gets its own.
    var responseVersion: HTTPVersion { keepsConnection ? request?.head.version ?? .http1_1 : .http2 }

    /// After a complete answer: an HTTP/1.1 connection that may go on waits for its next request
    /// (for `idle_timeout` at most); anything else is closed once the answer is written.
    func exchangeFinished(written: EventLoopFuture<Void>, context: ChannelHandlerContext) {
        let keepAlive = keepsConnection && requestEnded && request?.head.isKeepAlive == true
        guard keepAlive else {
            let closeStream = !requestEnded || keepsConnection
            written.assumeIsolated().whenComplete { _ in
                // An HTTP/2 stream whose request body is still coming is reset (NO_ERROR) by the close.
                if closeStream { context.close(promise: nil) }
            }
            return
        }
        request = nil
        token = nil
        isGRPC = false
        isHEAD = false
        bufferedBody.removeAll()
        bufferedBytes = 0
        requestEnded = false
        requestTrailers = nil
        responseHeadSent = false
        hasRetried = false
        bodyForwarded = false
        retryAdmission = nil
        routeAuth = "none"
        state = .awaitingHead
        armWatchdog(in: services.idleTimeout, context: context)
        context.read()
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        watchdog?.cancel()
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        context.read()
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        watchdog?.cancel()
        if case .forwarding(let leg) = state { leg.finish(completed: false) }
        state = .done
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        isInRead = true
        lastProgress = .now()
        switch unwrapInboundIn(data) {
        case .head(let head):
            receivedHead(head, context: context)
        case .body(let buffer):
            receivedBody(buffer, context: context)
        case .end(let trailers):
            requestEnded = true
            // Sanitized here, for every leg: only an HTTP/2 upstream gets trailers, and never a smuggled identity.
            requestTrailers = trailers.flatMap { services.upstreamHead.makeTrailers($0) }
            receivedEnd(context: context)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        isInRead = false
        switch state {
        case .admitted(let admission):
            connect(admission, context: context)
        case .forwarding(let leg):
            leg.flush()
            if !requestEnded && leg.isWritable { context.read() }
        case .awaitingHead, .readingSignOut:
            context.read()
        case .answering(let response, let grpcMessage):
            send(response, grpcMessage: grpcMessage, context: context)
        case .deciding, .connecting, .done:
            break
        }
        context.fireChannelReadComplete()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, case .forwarding(let leg) = state { leg.read() }
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let malformed = event as? HTTP2RequestHeadReader.Malformed {
            isInRead = true  // delivered inside the codec's read: the answer waits for the request's end (its next part)
            receivedMalformedHead(malformed.reason, context: context)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A malformed stream (bad pseudo-headers, a content-length that lies): this stream only.
        if case .forwarding(let leg) = state { leg.finish(completed: false) }
        state = .done
        context.close(promise: nil)
    }

    // MARK: - Request parts

    private func receivedHead(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        guard case .awaitingHead = state else { return }
        watchdog?.cancel()
        services = handle.services
        startedAt = .now()
        // gRPC refusals are an HTTP/2 form: an HTTP/1.1 client gets the plain answer (docs/reference.md §6).
        isGRPC = !keepsConnection && GRPCRefusal.isGRPC(head.headers)
        isHEAD = head.method == .HEAD
        let requestID = RequestID.acceptOrGenerate(head.headers.first(name: "x-request-id"))
        let tokenSource = BearerToken.extract(
            from: head.headers, cookieName: services.verification.tokenCookie, headerName: services.verification.tokenHeader)
        token = tokenSource.presentedToken
        guard let target = PathNormalizer.normalize(head.uri), ClientConnectionHandler.hasValidHost(head) else {
            request = .init(head: head, target: NormalizedTarget.root, requestID: requestID, clientIP: clientIP,
                            scheme: services.scheme, isWebSocket: false)
            services.metrics.request(routeAuth: "none", outcome: .badRequest)
            answer(LocalResponse.plain(.badRequest, "bad request target or authority"), context: context)
            return
        }
        var current = UpstreamRequestHead.Request(
            head: head, target: target, requestID: requestID, clientIP: clientIP, scheme: services.scheme, isWebSocket: false)
        var rule: RouteRule
        var endpoint: OwnEndpoint?
        var acceptingRevoked = false
        if OwnEndpoint.isOwn(target.path) {
            current.target = NormalizedTarget(path: target.path, query: nil)  // logged without its query
            request = current
            guard let own = OwnEndpoint(path: target.path) else {
                services.metrics.request(routeAuth: "none", outcome: .endpoint)
                answer(LocalResponse.json(.notFound, "{\"error\":\"not_found\"}"), context: context)
                return
            }
            guard own.allows(head.method) else {
                services.metrics.request(routeAuth: "none", outcome: .endpoint)
                var response = LocalResponse.json(.methodNotAllowed, "{\"error\":\"method_not_allowed\"}")
                response.headers.add(name: "Allow", value: own.allowHeader)
                answer(response, context: context)
                return
            }
            rule = RouteRule.defaultRule
            if own == .check {
                guard let described = OwnEndpoint.describedRequest(head) else {
                    services.metrics.request(routeAuth: "none", outcome: .badRequest)
                    answer(LocalResponse.json(.badRequest, "{\"error\":\"invalid_request\"}"), context: context)
                    return
                }
                (current.head, current.target) = described
                rule = services.routes.match(method: described.head.method.rawValue, path: described.target.path)
            }
            endpoint = own
            acceptingRevoked = own == .signout
        } else {
            rule = services.routes.match(method: head.method.rawValue, path: target.path)
        }
        request = current
        routeAuth = rule.auth.rawValue
        state = .deciding
        let now = Int64(Date().timeIntervalSince1970)
        // The fast path for forwarded requests, as on HTTP/1.1: still checked for expiry, keys, revocation, route.
        let recent = endpoint == nil ? RecentToken.identity(of: tokenMemory.value.recent, for: token, services: services) : nil
        let decision = services.gatekeeper.decide(
            current.head, path: current.target.path, rule: rule, token: tokenSource, now: now, acceptingRevoked: acceptingRevoked,
            recent: recent, on: context.eventLoop)
        decided(decision, endpoint: endpoint, rule: rule, context: context)
    }

    /// A request head that breaks HTTP2RequestHeadReader's rules: 400, never judged or forwarded.
    private func receivedMalformedHead(_ reason: String, context: ChannelHandlerContext) {
        guard case .awaitingHead = state else { return }
        watchdog?.cancel()
        startedAt = .now()
        services.metrics.request(routeAuth: "none", outcome: .badRequest)
        answer(LocalResponse.plain(.badRequest, "malformed request: \(reason)"), context: context)
    }

    private func receivedBody(_ buffer: ByteBuffer, context: ChannelHandlerContext) {
        switch state {
        case .forwarding(let leg):
            leg.writeBody(buffer)
            bodyForwarded = true
        case .deciding, .admitted, .connecting, .readingSignOut:
            bufferedBody.append(buffer)
            bufferedBytes += buffer.readableBytes
            if case .readingSignOut = state, bufferedBytes > SignOutRequest.maxBodyBytes {
                answer(LocalResponse.json(.payloadTooLarge, "{\"error\":\"invalid_request\",\"error_description\":\"body too large\"}"),
                       context: context)
            }
        case .awaitingHead, .answering, .done:
            break
        }
    }

    private func receivedEnd(context: ChannelHandlerContext) {
        switch state {
        case .forwarding(let leg):
            leg.writeEnd(trailers: requestTrailers)
            leg.flush()
        case .readingSignOut(let endpoint, let identity):
            signOut(endpoint, identity, context: context)
        case .answering(let response, let grpcMessage):
            send(response, grpcMessage: grpcMessage, context: context)
        case .awaitingHead, .deciding, .admitted, .connecting, .done:
            break
        }
    }

    // MARK: - Decisions

    private func decided(_ decision: Gatekeeper.Decision, endpoint: OwnEndpoint?, rule: RouteRule, context: ChannelHandlerContext) {
        if case .pending = decision {} else if rule.auth != .public {
            services.metrics.authDuration.recordNanoseconds((NIODeadline.now() - startedAt).nanoseconds)
        }
        switch decision {
        case .admit(let admission):
            if let endpoint {
                answerEndpoint(endpoint, admission, context: context)
            } else {
                if case .verified(let identity) = admission, let token, services.gatekeeper.userinfo == nil {
                    tokenMemory.value.recent = RecentToken(token: token, identity: identity, identityFields: nil, services: services)
                }
                state = .admitted(admission)  // connected at the end of this read
            }
        case .reject(let failure):
            reject(failure, context: context)
        case .pending(let future):
            future.assumeIsolated().whenComplete { result in
                guard case .deciding = self.state, let context = self.context else { return }
                switch result {
                case .success(let decision):
                    self.decided(decision, endpoint: endpoint, rule: rule, context: context)
                    if case .admitted(let admission) = self.state { self.connect(admission, context: context) }
                case .failure:
                    self.reject(AuthFailure(.keysUnavailable, "key refetch failed"), context: context)
                }
            }
        }
    }

    private func reject(_ failure: AuthFailure, context: ChannelHandlerContext) {
        guard let request else { return }
        services.recordRejection(failure, of: request, routeAuth: routeAuth, token: token)
        let (status, headers, body) = AuthErrorResponse.make(failure, requestID: request.requestID, retryAfterSeconds: services.retryAfterSeconds)
        let message = "\(failure.reason.rawValue): \(AuthErrorResponse.message(for: failure.reason))"
        answer(LocalResponse(status: status, headers: headers, body: body), grpcMessage: message, context: context)
    }

    private func answerEndpoint(_ endpoint: OwnEndpoint, _ admission: Gatekeeper.Admission, context: ChannelHandlerContext) {
        services.metrics.request(routeAuth: "none", outcome: .endpoint)
        switch (endpoint, admission) {
        case (.check, _):
            var response = LocalResponse.json(.ok, "{\"allowed\":true}")
            services.upstreamHead.addIdentityHeaders(for: admission, to: &response.headers)
            answer(response, context: context)
        case (.userinfo, .verified(let identity)):
            answer(LocalResponse.json(.ok, ClientConnectionHandler.userinfoJSON(identity)), context: context)
        case (.signout, .verified(let identity)), (.signoutEverywhere, .verified(let identity)):
            if requestEnded {
                signOut(endpoint, identity, context: context)
            } else {
                state = .readingSignOut(endpoint, identity)
                armWatchdog(in: services.idleTimeout, context: context)
            }
        case (.userinfo, _), (.signout, _), (.signoutEverywhere, _):
            answer(LocalResponse.json(.unauthorized, "{\"error\":\"invalid_token\"}"), context: context)
        }
    }

    private func signOut(_ endpoint: OwnEndpoint, _ identity: VerifiedIdentity, context: ChannelHandlerContext) {
        var body: [UInt8] = []
        for buffer in bufferedBody { body.append(contentsOf: buffer.readableBytesView) }
        bufferedBody.removeAll()
        state = .deciding
        let contentType = request?.head.headers.first(name: "content-type")
        SignOutResponder(services: services).respond(endpoint, identity, token: token, body: body, contentType: contentType,
                                                     on: context.eventLoop)
            .assumeIsolated().whenSuccess { response in
                guard case .deciding = self.state, let context = self.context else { return }
                self.answer(response, context: context)
            }
    }

    // MARK: - Answers

    /// A local answer: JSON (or text) with the request id, or for a gRPC call its trailers-only form.
    func answer(_ response: LocalResponse, grpcMessage: String? = nil, context: ChannelHandlerContext) {
        watchdog?.cancel()
        if requestEnded || responseHeadSent || !isInRead {
            send(response, grpcMessage: grpcMessage, context: context)
        } else {
            state = .answering(response, grpcMessage: grpcMessage)
        }
    }

    private func send(_ response: LocalResponse, grpcMessage: String?, context: ChannelHandlerContext) {
        state = .done
        guard !responseHeadSent else {
            context.close(promise: nil)
            return
        }
        responseHeadSent = true
        let requestID = request?.requestID ?? RequestID.acceptOrGenerate(nil)
        var local = response
        if isGRPC {
            local = GRPCRefusal.response(for: response, message: grpcMessage ?? Self.defaultGRPCMessage(response.status))
        }
        var headers = local.headers
        headers.add(name: "x-request-id", value: requestID)
        if !isGRPC { headers.add(name: "content-length", value: String(local.body.utf8.count)) }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: responseVersion, status: local.status, headers: headers))), promise: nil)
        if !local.body.isEmpty && !isHEAD {
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: local.body)))), promise: nil)
        }
        exchangeFinished(written: context.writeAndFlush(wrapOutboundOut(.end(nil))), context: context)
    }

    private static func defaultGRPCMessage(_ status: HTTPResponseStatus) -> String {
        switch status {
        case .gatewayTimeout: "upstream_timeout: the upstream did not answer in time"
        case .badGateway, .serviceUnavailable: "upstream_unavailable: the upstream cannot be reached"
        default: "\(status.code) \(status.reasonPhrase)"
        }
    }

    // MARK: - Watchdog

    /// Fires once; re-armed while the stream makes progress.
    func armWatchdog(in delay: TimeAmount, context: ChannelHandlerContext) {
        watchdog?.cancel()
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        watchdog = context.eventLoop.scheduleTask(in: delay) { loopBound.value.watchdogFired() }
    }

    private func watchdogFired() {
        guard let context else { return }
        switch state {
        case .readingSignOut:
            state = .done
            context.close(promise: nil)
        case .connecting, .forwarding:
            if !responseHeadSent {
                upstreamFailed(.gatewayTimeout, context: context)
                return
            }
            let idle = NIODeadline.now() - lastProgress
            if idle >= services.idleTimeout {
                // Nothing moved either way for idle_timeout: a zero-window stall or a dead peer.
                if case .forwarding(let leg) = state { leg.finish(completed: false) }
                state = .done
                context.close(promise: nil)
            } else {
                armWatchdog(in: services.idleTimeout - idle, context: context)
            }
        case .awaitingHead:
            state = .done  // an idle keep-alive connection (slowloris)
            context.close(promise: nil)
        case .deciding, .admitted, .answering, .done:
            break
        }
    }
}
