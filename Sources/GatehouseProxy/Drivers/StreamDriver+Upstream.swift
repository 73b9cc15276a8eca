import Logging
package import NIOCore
package import NIOHTTP1
package import GatehouseHTTP
import GatehouseTelemetry
package import GatehouseExchange
package import GatehousePolicy

/// The upstream half of an exchange: open a leg, stream both ways with backpressure, relay 1xx heads,
/// trailers and a WebSocket's 101, answer 502/504 (gRPC: UNAVAILABLE / DEADLINE_EXCEEDED) when the
/// upstream fails.
extension StreamDriver: UpstreamLegDelegate {
    package func connect(_ admission: Admission) {
        state = .connecting
        // The core's deadlines: the response head's (a retry's leg keeps the first one's), a stalled body's.
        let now = NIODeadline.now()
        let watch = core.upstreamLegStartedWatch(now: now)
        if let request { trace?.upstreamStarted(at: now, method: request.head.method.rawValue, path: request.target.path) }
        if case .ahead(let next) = watch { armWatchdog(at: next) }
        if let leg = connection.upstream.openIdle(on: transport.eventLoop) { return begin(leg, admission: admission) }
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

    private func begin(_ leg: any UpstreamLeg, admission: Admission) {
        guard let inHand = core.inHand else { return }
        leg.delegate = self
        state = .forwarding(leg)
        // The same token as last time on this connection, under the same configuration, has the same identity
        // fields (userinfo enrichment aside, which is never remembered): written as they were.
        let tokenMemory = connection.tokenMemory
        let written = leg.start(
            inHand.request, admission: admission, services: services, http2Body: http2RequestHasBody,
            identityFields: tokenMemory.identityFields(for: inHand))
        if case .verified(let identity) = admission, !inHand.presentsRecentToken || written != nil {
            tokenMemory.remember(inHand, identity: identity, identityFields: written)
        }
        for buffer in bufferedBody {
            leg.writeBody(buffer)
            bodyForwarded = true
        }
        bufferedBody.removeAll()
        if requestEnded { leg.writeEnd(trailers: requestTrailers) }
        // Within a read of the request, its `readComplete()` flushes and asks for more once the read's parts are written.
        guard !core.isInRead else { return }
        leg.flush()
        if !requestEnded && leg.isWritable { transport.readRequest() }
    }

    package func upstreamFailed(_ status: HTTPResponseStatus) {
        if case .forwarding(let leg) = state { leg.finish(completed: false) }
        trace?.upstreamEnded(at: .now(), status: nil, error: status == .gatewayTimeout ? "upstream timeout" : "upstream unavailable")
        deadline = nil
        state = .core
        perform(core.upstreamFailed(status))
    }

    // MARK: UpstreamLegDelegate

    package func upstreamLegReceivedHead(_ head: ClientResponseHead, at now: NIODeadline) {
        guard case .forwarding = state else { return }
        responseStatus = head.statusCode
        if core.inHand?.bindsSessions == true {
            core.upstreamAnswered(status: head.statusCode, sessionID: head.firstValue(of: "mcp-session-id"))
            performRecords()
        }
        if let next = core.upstreamResponseStarted(now: now) { armWatchdog(at: next) }
        transport.writeHead(head, endStream: false, closesConnection: false)
    }

    package func upstreamLegReceivedInformational(_ head: ClientResponseHead) {
        guard case .forwarding = state, core.relaysInformational else { return }
        transport.writeInformational(head)
        transport.flush()
    }

    package func upstreamLegSwitchedProtocols(_ head: ClientResponseHead) {
        guard case .forwarding(let leg) = state else { return }
        guard core.upstreamSwitchedProtocols(), let tunnelEnd = leg.takeTunnelEnd() else {
            upstreamFailed(.badGateway)
            return
        }
        performRecords()
        deadline = nil
        state = .done
        responseStatus = head.statusCode
        trace?.upstreamEnded(at: .now(), status: head.statusCode, error: nil)
        endTrace()
        if !transport.startTunnel(head, upstream: tunnelEnd) {
            tunnelEnd.channel.close(promise: nil)
            transport.finish(completed: false)
        }
    }

    package func upstreamLegReceivedBody(_ buffer: ByteBuffer, at now: NIODeadline) {
        guard case .forwarding = state else { return }
        core.progressed(.responseBytes, now: now)
        transport.writeBody(buffer)
    }

    package func upstreamLegReceivedEnd(trailers: HTTPHeaders?, at now: NIODeadline) {
        guard case .forwarding(let leg) = state else { return }
        deadline = nil
        state = .done
        leg.finish(completed: requestEnded)
        perform(core.upstreamCompleted(now: now))
        // An upstream that answered before the request body ended: the stream or connection closes.
        transport.writeEnd(trailers: trailers)
        transport.flush()
        transport.finish(completed: requestEnded)
        trace?.upstreamEnded(at: now, status: responseStatus, error: nil)
        endTrace()
    }

    package func upstreamLegReadComplete() {
        guard case .forwarding(let leg) = state else { return }
        transport.flush()
        if transport.isWritable { leg.read() }
    }

    package func upstreamLegWritabilityChanged(isWritable: Bool) {
        guard case .forwarding = state, isWritable, !requestEnded else { return }
        core.progressed(.upstreamTakesMore, now: .now())
        transport.readRequest()
    }

    package func upstreamLegFailed(_ loss: UpstreamLoss) {
        guard case .forwarding = state else { return }
        let action = core.upstreamLost(loss, replayable: isReplayable)
        if !action.isRetry {
            deadline = nil
            state = .core
        }
        perform(action)
    }
}
