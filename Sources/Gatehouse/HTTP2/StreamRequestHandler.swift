import Prometheus
import Foundation
import NIOCore
import NIOHTTP1

/// One HTTP/2 stream: one request, driven through the request core (`ExchangeStateMachine`) like
/// an HTTP/1.1 request, then forwarded over an upstream leg with the identity headers. This handler
/// frames: parts in, the core's answers and the upstream's response out. A stream's failure never
/// touches the other streams of its connection.
///
/// With an HTTP/2 upstream it also serves HTTP/1.1 client connections (behind NIO's HTTP/1
/// codec), one request after the other (`keepsConnection`): requests in parts are what both
/// protocols share once framed.
final class StreamRequestHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    enum State {
        /// The core has the request: intake, decision, a local answer or a sign-out.
        case core
        case connecting
        case forwarding(any UpstreamLeg)
        case done
    }

    private let handle: ServicesHandle
    let upstream: UpstreamLegFactory
    /// The connection's last verified token (`RecentToken`), shared with its other streams.
    private let tokenMemory: NIOLoopBound<ConnectionTokenMemory>
    private let clientIP: String
    var services: ProxyServices
    var state = State.core
    var core: ExchangeStateMachine
    var context: ChannelHandlerContext?

    /// Body that arrived while the upstream leg was opening.
    var bufferedBody: [ByteBuffer] = []
    var requestTrailers: HTTPHeaders?
    var responseHeadSent = false
    var hasRetried = false
    var bodyForwarded = false
    /// What a refused stream is sent again with, once, while nothing of it can have been processed.
    var retryAdmission: Gatekeeper.Admission?
    /// The upstream's response head must arrive by then (`[upstream] timeout`); a stream that
    /// then flows (gRPC streaming) is bounded by `idle_timeout` between bytes instead.
    var watchdog: Scheduled<Void>?
    var lastProgress = NIODeadline.now()

    /// An HTTP/1.1 connection serving requests one after the other, rather than one HTTP/2 stream.
    let keepsConnection: Bool

    init(
        handle: ServicesHandle, upstream: UpstreamLegFactory, clientIP: String, tokenMemory: NIOLoopBound<ConnectionTokenMemory>,
        eventLoop: any EventLoop, keepsConnection: Bool = false
    ) {
        self.handle = handle
        self.tokenMemory = tokenMemory
        self.upstream = upstream
        self.clientIP = clientIP
        self.keepsConnection = keepsConnection
        self.services = handle.services
        self.core = ExchangeStateMachine(speaksGRPC: !keepsConnection, eventLoop: eventLoop)
    }

    var request: UpstreamRequestHead.Request? { core.exchange?.request }
    var requestEnded: Bool { core.requestEnded }
    var routeAuth: String { core.exchange?.routeAuth ?? "none" }

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
        core.reset()
        bufferedBody.removeAll()
        requestTrailers = nil
        responseHeadSent = false
        hasRetried = false
        bodyForwarded = false
        retryAdmission = nil
        state = .core
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
        core.readBegan()
        lastProgress = .now()
        switch unwrapInboundIn(data) {
        case .head(let head):
            guard case .core = state, case .awaitingHead = core.state else { return }
            watchdog?.cancel()
            services = handle.services
            perform(core.receivedHead(head, clientIP: clientIP, services: services, recent: tokenMemory.value.recent), context: context)
        case .body(let buffer):
            switch state {
            case .core: perform(core.receivedBody(buffer), context: context)
            case .connecting:
                bufferedBody.append(buffer)
            case .forwarding(let leg):
                leg.writeBody(buffer)
                bodyForwarded = true
            case .done: break
            }
        case .end(let trailers):
            let action = core.receivedEnd()
            // Sanitized here, for every leg: only an HTTP/2 upstream gets trailers, and never a smuggled identity.
            requestTrailers = trailers.flatMap { services.upstreamHead.makeTrailers($0) }
            if case .forwarding(let leg) = state {
                leg.writeEnd(trailers: requestTrailers)
                leg.flush()
            }
            perform(action, context: context)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        perform(core.readEnded(), context: context)
        switch state {
        case .forwarding(let leg):
            leg.flush()
            if !requestEnded && leg.isWritable { context.read() }
        case .core:
            switch core.state {
            case .awaitingHead, .readingSignOut: context.read()
            case .waiting, .admitted, .answering, .forwarding, .finished: break
            }
        case .connecting, .done:
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
            // Delivered inside the codec's read: the answer waits for the request's end (its next part).
            core.readBegan()
            guard case .core = state else { return }
            watchdog?.cancel()
            perform(core.receivedMalformedHead(malformed.reason, services: services), context: context)
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

    // MARK: - The core's actions

    func perform(_ action: ExchangeStateMachine.Action, context: ChannelHandlerContext) {
        switch action {
        case .none:
            break
        case .awaitDecision, .awaitAnswer:
            awaitOutcome(of: action)
        case .readBody:
            armWatchdog(in: services.idleTimeout, context: context)
        case .send(let response):
            send(response, context: context)
        case .forward(let admission, let body):
            if case .verified(let identity) = admission, let exchange = core.exchange {
                tokenMemory.value.remember(exchange, identity: identity, identityFields: nil)
            }
            bufferedBody = body
            connect(admission, context: context)
        }
    }

    // MARK: - Answers

    private func send(_ local: LocalResponse, context: ChannelHandlerContext) {
        watchdog?.cancel()
        state = .done
        guard !responseHeadSent else {
            context.close(promise: nil)
            return
        }
        responseHeadSent = true
        let requestID = request?.requestID ?? RequestID.acceptOrGenerate(nil)
        let isGRPC = core.exchange?.isGRPC == true
        var headers = local.headers
        headers.add(name: "x-request-id", value: requestID)
        if !isGRPC { headers.add(name: "content-length", value: String(local.body.utf8.count)) }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: responseVersion, status: local.status, headers: headers))), promise: nil)
        if !local.body.isEmpty && core.exchange?.isHEAD != true {
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: local.body)))), promise: nil)
        }
        exchangeFinished(written: context.writeAndFlush(wrapOutboundOut(.end(nil))), context: context)
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
        case .core:
            switch core.state {
            case .awaitingHead, .readingSignOut:
                // An idle keep-alive connection, or a sign-out body that stopped coming (slowloris).
                state = .done
                context.close(promise: nil)
            case .waiting, .admitted, .answering, .forwarding, .finished:
                break
            }
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
        case .done:
            break
        }
    }
}

extension StreamRequestHandler: ExchangeDriving {
    var coreHasRequest: Bool {
        if case .core = state { return true }
        return false
    }
}
