import Logging
import Prometheus
import NIOCore
import NIOHTTP1

/// The upstream half of a stream: open a leg, stream both ways with backpressure, relay
/// trailers, answer 502/504 (gRPC: UNAVAILABLE / DEADLINE_EXCEEDED) when the upstream fails.
extension StreamRequestHandler: UpstreamLegDelegate {
    func connect(_ admission: Gatekeeper.Admission, context: ChannelHandlerContext) {
        state = .connecting
        if !responseHeadSent { armWatchdog(in: services.responseTimeout, context: context) }
        upstream.open(on: context.eventLoop) { result in
            guard case .connecting = self.state, let context = self.context else {
                if case .success(let leg) = result { leg.finish(completed: false) }
                return
            }
            switch result {
            case .success(let leg):
                self.begin(leg, admission: admission, context: context)
            case .failure(let error):
                self.services.logger.warning("upstream connect failed", metadata: ["gatehouse.error": "\(error)"])
                self.upstreamFailed(.badGateway, context: context)
            }
        }
    }

    private func begin(_ leg: any UpstreamLeg, admission: Gatekeeper.Admission, context: ChannelHandlerContext) {
        guard let request else { return }
        leg.delegate = self
        state = .forwarding(leg)
        leg.start(request, admission: admission, services: services, hasBody: !(requestEnded && bufferedBody.isEmpty))
        for buffer in bufferedBody {
            leg.writeBody(buffer)
            bodyForwarded = true
        }
        bufferedBody.removeAll()
        if requestEnded { leg.writeEnd(trailers: requestTrailers) }
        leg.flush()
        // Kept for a retry only until the request is sent whole; a streamed body cannot be replayed.
        if !requestEnded && leg.isWritable { context.read() }
        retryAdmission = requestEnded && !bodyForwarded ? admission : nil
    }

    func upstreamFailed(_ status: HTTPResponseStatus, context: ChannelHandlerContext) {
        if case .forwarding(let leg) = state { leg.finish(completed: false) }
        watchdog?.cancel()
        state = .core
        perform(core.upstreamFailed(status), context: context)
    }

    // MARK: UpstreamLegDelegate

    func upstreamLegReceivedHead(_ head: HTTPResponseHead) {
        guard case .forwarding = state, let context else { return }
        responseHeadSent = true
        lastProgress = .now()
        // From here the stream may run for minutes (gRPC streaming): bounded by idle time, not length.
        armWatchdog(in: services.idleTimeout, context: context)
        var relayed = head
        relayed.version = responseVersion
        context.write(wrapOutboundOut(.head(relayed)), promise: nil)
    }

    func upstreamLegReceivedBody(_ buffer: ByteBuffer) {
        guard case .forwarding = state, let context else { return }
        lastProgress = .now()
        context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
    }

    func upstreamLegReceivedEnd(trailers: HTTPHeaders?) {
        guard case .forwarding(let leg) = state, let context else { return }
        watchdog?.cancel()
        state = .done
        leg.finish(completed: requestEnded)
        core.upstreamCompleted()
        // An upstream that answered before the request body ended: the stream or connection closes.
        exchangeFinished(written: context.writeAndFlush(wrapOutboundOut(.end(trailers))), context: context)
    }

    func upstreamLegReadComplete() {
        guard case .forwarding(let leg) = state, let context else { return }
        context.flush()
        if context.channel.isWritable { leg.read() }
    }

    func upstreamLegWritabilityChanged(isWritable: Bool) {
        guard case .forwarding = state, isWritable, !requestEnded, let context else { return }
        context.read()
    }

    func upstreamLegFailed(retryable: Bool) {
        guard case .forwarding = state, let context else { return }
        if responseHeadSent {
            // Cut mid-response: the client must not take it for complete.
            state = .done
            context.close(promise: nil)
        } else if retryable, !hasRetried, let admission = retryAdmission {
            hasRetried = true
            connect(admission, context: context)
        } else {
            state = .connecting  // so that upstreamFailed does not finish the failed leg again
            upstreamFailed(.badGateway, context: context)
        }
    }
}
