import Logging
import NIOCore
import NIOHTTP1

/// The upstream half of a stream exchange: open a leg, stream both ways with backpressure, relay
/// trailers, answer 502/504 (gRPC: UNAVAILABLE / DEADLINE_EXCEEDED) when the upstream fails.
extension StreamDriver: UpstreamLegDelegate {
    func connect(_ admission: Gatekeeper.Admission) {
        state = .connecting
        // The core's deadline for the response head: a retry's leg keeps the first one's.
        if !responseHeadSent, let headDeadline = core.upstreamLegStarted(now: .now()) { armWatchdog(at: headDeadline) }
        connection.upstream.open(on: transport.eventLoop) { result in
            guard case .connecting = self.state else {
                if case .success(let leg) = result { leg.finish(completed: false) }
                return
            }
            switch result {
            case .success(let leg):
                self.begin(leg, admission: admission)
            case .failure(let error):
                self.services.logger.warning("upstream connect failed", metadata: ["gatehouse.error": "\(error)"])
                self.upstreamFailed(.badGateway)
            }
        }
    }

    private func begin(_ leg: any UpstreamLeg, admission: Gatekeeper.Admission) {
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
        if !requestEnded && leg.isWritable { transport.readRequest() }
        retryAdmission = requestEnded && !bodyForwarded ? admission : nil
    }

    func upstreamFailed(_ status: HTTPResponseStatus) {
        if case .forwarding(let leg) = state { leg.finish(completed: false) }
        deadline = nil
        state = .core
        perform(core.upstreamFailed(status))
    }

    // MARK: UpstreamLegDelegate

    func upstreamLegReceivedHead(_ head: HTTPResponseHead) {
        guard case .forwarding = state else { return }
        responseHeadSent = true
        lastProgress = .now()
        // From here the stream may run for minutes (gRPC streaming): bounded by idle time, not length.
        armWatchdog(in: services.idleTimeout)
        var relayed = head
        relayed.version = responseVersion
        transport.writeHead(relayed, endStream: false)
    }

    func upstreamLegReceivedBody(_ buffer: ByteBuffer) {
        guard case .forwarding = state else { return }
        lastProgress = .now()
        transport.writeBody(buffer)
    }

    func upstreamLegReceivedEnd(trailers: HTTPHeaders?) {
        guard case .forwarding(let leg) = state else { return }
        deadline = nil
        state = .done
        leg.finish(completed: requestEnded)
        perform(core.upstreamCompleted(now: .now()))
        // An upstream that answered before the request body ended: the stream or connection closes.
        let promise = transport.eventLoop.makePromise(of: Void.self)
        transport.writeEnd(trailers: trailers, promise: promise)
        transport.flush()
        finished(written: promise.futureResult)
    }

    func upstreamLegReadComplete() {
        guard case .forwarding(let leg) = state else { return }
        transport.flush()
        if transport.isWritable { leg.read() }
    }

    func upstreamLegWritabilityChanged(isWritable: Bool) {
        guard case .forwarding = state, isWritable, !requestEnded else { return }
        transport.readRequest()
    }

    func upstreamLegFailed(_ loss: UpstreamLoss) {
        guard case .forwarding = state else { return }
        if responseHeadSent {
            // Cut mid-response: the client must not take it for complete.
            state = .done
            transport.finish(completed: false)
            return
        }
        let action = core.upstreamLost(loss, replayable: retryAdmission != nil)
        if !action.isRetry {
            deadline = nil
            state = .core
        }
        perform(action)
    }
}
