import NIOCore
import NIOHTTP1

/// One request of an HTTP/2 stream (or of an HTTP/1.1 connection in front of an HTTP/2 upstream):
/// driven through the request core (`ExchangeStateMachine`) like any request, then forwarded over an
/// upstream leg with the identity headers. It frames nothing itself: its transport (`StreamTransport`)
/// writes the core's answers and the upstream's response. A stream's failure never touches the other
/// streams of its connection.
final class StreamDriver: ExchangeDriving {
    enum State {
        /// The core has the request: intake, decision, a local answer or a sign-out.
        case core
        case connecting
        case forwarding(any UpstreamLeg)
        case done
    }

    /// Who the exchange is forwarded and answered for, shared by the exchanges of one connection.
    struct Connection {
        let handle: ServicesHandle
        let upstream: UpstreamLegFactory
        let peer: ClientPeer
        /// The connection's last verified token (`RecentToken`), shared by its streams (one event loop).
        let tokenMemory: ConnectionTokenMemory
    }

    let connection: Connection
    /// Kept until the exchange is done with it (the transport drops the exchange once closed).
    let transport: any StreamTransport
    var services: ProxyServices
    var state = State.core
    var core: ExchangeStateMachine
    /// Body that arrived while the upstream leg was opening.
    var bufferedBody: [ByteBuffer] = []
    var requestTrailers: HTTPHeaders?
    var responseHeadSent = false
    var bodyForwarded = false
    /// What a refused stream is sent again with, once, while nothing of it can have been processed.
    var retryAdmission: Gatekeeper.Admission?
    /// The upstream's response head must arrive by then (`[upstream] timeout`); a stream that
    /// then flows (gRPC streaming) is bounded by `idle_timeout` between bytes instead. No timer of its
    /// own: the transport wakes it (`deadlinePassed(now:)`), one timer per connection.
    var deadline: NIODeadline?
    var lastProgress = NIODeadline.now()

    init(connection: Connection, transport: any StreamTransport) {
        self.connection = connection
        self.transport = transport
        self.services = connection.handle.services
        // gRPC refusals are an HTTP/2 form: an HTTP/1.1 client gets the plain answer (docs/reference.md §6).
        self.core = ExchangeStateMachine(speaksGRPC: transport.clientVersion == nil, forwardsAtReadEnd: true)
    }

    var request: UpstreamRequestHead.Request? { core.exchange?.request }
    var requestEnded: Bool { core.requestEnded }
    var isDone: Bool {
        if case .done = state { return true }
        return false
    }

    /// The response version: HTTP/2 streams ignore it; an HTTP/1.x client gets its own.
    var responseVersion: HTTPVersion { transport.clientVersion ?? .http2 }

    // MARK: - What the transport reports

    /// Parts of the request are arriving: an answer decided now may wait for its end until `readComplete()`.
    func readBegan() {
        core.readBegan()
        lastProgress = .now()
    }

    func receivedHead(_ head: HTTPRequestHead) {
        guard case .core = state, case .awaitingHead = core.state else { return }
        services = connection.handle.services
        perform(core.receivedHead(
            head, clientIP: connection.peer.ip, certificateThumbprint: connection.peer.certificateThumbprint, services: services, recent: connection.tokenMemory.recent,
            now: .now()))
    }

    /// A head the transport's reader refused (HTTP2RequestHeadReader): 400 (431 for its size), never judged.
    func receivedMalformedHead(_ reason: String, status: HTTPResponseStatus) {
        guard case .core = state else { return }
        perform(core.receivedMalformedHead(reason, status: status))
    }

    func receivedBody(_ buffer: ByteBuffer) {
        switch state {
        case .core: perform(core.receivedBody(buffer))
        case .connecting: bufferedBody.append(buffer)
        case .forwarding(let leg):
            leg.writeBody(buffer)
            bodyForwarded = true
        case .done: break
        }
    }

    func receivedEnd(trailers: HTTPHeaders?) {
        let action = core.receivedEnd()
        // Sanitized here, for every leg: only an HTTP/2 upstream gets trailers, and never a smuggled identity.
        requestTrailers = trailers.flatMap { services.upstreamHead.makeTrailers($0) }
        if case .forwarding(let leg) = state {
            leg.writeEnd(trailers: requestTrailers)
            leg.flush()
        }
        perform(action)
    }

    /// The read that carried request parts is over.
    func readComplete() {
        perform(core.readEnded())
        switch state {
        case .forwarding(let leg):
            leg.flush()
            if !requestEnded && leg.isWritable { transport.readRequest() }
        case .core:
            if core.isReadingBody { transport.readRequest() }
        case .connecting, .done:
            break
        }
    }

    /// The client takes response bytes again.
    func transportBecameWritable() {
        if case .forwarding(let leg) = state { leg.read() }
    }

    /// The client went away, or the stream was reset: the upstream leg is given up.
    func transportClosed() {
        deadline = nil
        if case .forwarding(let leg) = state { leg.finish(completed: false) }
        state = .done
    }

    // MARK: - The core's actions

    var coreHasRequest: Bool {
        if case .core = state { return true }
        return false
    }

    var coreEventLoop: any EventLoop { transport.eventLoop }

    func performCoreAction(_ action: ExchangeStateMachine.Action) {
        perform(action)
    }

    func perform(_ action: ExchangeStateMachine.Action) {
        performRecords()
        switch action {
        case .none:
            break
        case .decide, .signOut, .awaitDecision, .awaitAnswer:
            performDecisionAction(action)
        case .readBody:
            armWatchdog(in: services.idleTimeout)
        case .send(let response):
            send(response)
        case .retry:
            // The same request on a new upstream leg (the core's rule said it may go again).
            if case .forwarding = state, let admission = retryAdmission { connect(admission) }
        case .forward(let admission, let body):
            if case .verified(let identity) = admission, let exchange = core.exchange {
                connection.tokenMemory.remember(exchange, identity: identity, identityFields: nil)
            }
            bufferedBody = body
            connect(admission)
        }
    }

    // MARK: - Answers

    /// A local answer (the core has put a gRPC call's in its trailers-only form), with the request id.
    private func send(_ local: LocalResponse) {
        deadline = nil
        state = .done
        guard !responseHeadSent else {
            transport.finish(completed: false)
            return
        }
        responseHeadSent = true
        let requestID = request?.requestID ?? RequestID.acceptOrGenerate(nil)
        let isGRPC = core.exchange?.isGRPC == true
        // An answer that ends the connection (a request target with no single reading) does so on an
        // HTTP/1.1 connection as on the HTTP/1.1 door; an HTTP/2 stream ends with its answer anyway.
        let closesConnection = local.closeConnection && transport.clientVersion != nil
        var headers = local.headers
        ResponseFields.setRequestID(requestID, on: &headers)
        if closesConnection { headers.add(name: "connection", value: "close") }
        if !isGRPC { headers.add(name: "content-length", value: String(local.body.utf8.count)) }
        let head = HTTPResponseHead(version: responseVersion, status: local.status, headers: headers)
        let promise = transport.eventLoop.makePromise(of: Void.self)
        if local.body.isEmpty || core.exchange?.isHEAD == true {
            transport.writeHead(head, endStream: true)
            promise.succeed()
        } else {
            transport.writeHead(head, endStream: false)
            transport.writeBody(transport.allocator.buffer(string: local.body))
            transport.writeEnd(trailers: nil, promise: promise)
        }
        transport.flush()
        finished(written: promise.futureResult, closingConnection: closesConnection)
    }

    /// After the answer: a whole exchange lets an HTTP/1.1 connection go on; a request whose body is
    /// still coming is reset (HTTP/2, NO_ERROR once answered) or its connection closed.
    func finished(written: EventLoopFuture<Void>, closingConnection: Bool = false) {
        let completed = requestEnded && !closingConnection
        written.assumeIsolated().whenComplete { _ in self.transport.finish(completed: completed) }
    }

    // MARK: - Watchdog

    /// Sets the exchange's next deadline; the transport's timer wakes it then.
    func armWatchdog(in delay: TimeAmount) {
        armWatchdog(at: NIODeadline.now() + delay)
    }

    func armWatchdog(at next: NIODeadline) {
        deadline = next
        transport.wake(at: next)
    }

    /// The transport's timer fired: acts if the deadline has passed. Returns the deadline still ahead, if any.
    func deadlinePassed(now: NIODeadline) -> NIODeadline? {
        guard let deadline else { return nil }
        guard deadline <= now else { return deadline }
        self.deadline = nil
        watchdogFired()
        return self.deadline
    }

    private func watchdogFired() {
        switch state {
        case .core:
            // A sign-out body that stopped coming (slowloris).
            if core.isReadingBody {
                state = .done
                transport.finish(completed: false)
            }
        case .connecting, .forwarding:
            if !responseHeadSent {
                upstreamFailed(.gatewayTimeout)
                return
            }
            let idle = NIODeadline.now() - lastProgress
            if idle >= services.idleTimeout {
                // Nothing moved either way for idle_timeout: a zero-window stall or a dead peer.
                if case .forwarding(let leg) = state { leg.finish(completed: false) }
                state = .done
                transport.finish(completed: false)
            } else {
                armWatchdog(in: services.idleTimeout - idle)
            }
        case .done:
            break
        }
    }
}
