package import NIOCore
package import NIOHTTP1
import GatehouseSyntax
import GatehouseHTTP
package import GatehouseTelemetry
import GatehouseAuth
package import GatehouseExchange

/// One request of a client, on either door: driven through the request core (`ExchangeStateMachine`),
/// then forwarded over an upstream leg (`UpstreamLeg`, HTTP/1.1 or HTTP/2) with the identity headers, and
/// the upstream's answer relayed. It frames nothing itself: its transport (`StreamTransport`: an HTTP/2
/// stream, or the HTTP/1.1 door for the connection's current request) writes the core's answers and the
/// upstream's response. It executes the core's actions, once for both doors: it opens the leg (again for a retry),
/// arms the one timer at the instant the core names and does what the core finds then, frames a local answer. A
/// stream's failure never touches the other streams of its connection.
package final class StreamDriver: ExchangeDriving {
    package enum State {
        /// The core has the request: intake, decision, a local answer or a sign-out.
        case core
        case connecting
        case forwarding(any UpstreamLeg)
        case done
    }

    /// Who the exchange is forwarded and answered for, shared by the exchanges of one connection: a class, so that
    /// each exchange holds it with one reference, not a copy of each member.
    package final class Connection {
        package let handle: ServicesHandle
        package let upstream: UpstreamLegFactory
        package let peer: ClientPeer
        /// The connection's last verified token (`RecentToken`), shared by its streams (one event loop).
        package let tokenMemory: ConnectionTokenMemory

        package init(handle: ServicesHandle, upstream: UpstreamLegFactory, peer: ClientPeer, tokenMemory: ConnectionTokenMemory) {
            self.handle = handle
            self.upstream = upstream
            self.peer = peer
            self.tokenMemory = tokenMemory
        }
    }

    package let connection: Connection
    /// Kept until the exchange is done with it (the transport drops its driver once closed).
    let transport: any StreamTransport
    /// The configuration when the driver was made, as its request's head arrived: a reload applies to the next one.
    package let services: ProxyServices
    var state = State.core
    package var core: ExchangeStateMachine
    /// Body that arrived while the upstream leg was opening.
    var bufferedBody: [ByteBuffer] = []
    var requestTrailers: HTTPHeaders?
    var bodyForwarded = false
    /// Whether Gatehouse can send the whole request again: it ended and none of its body went upstream
    /// (a streamed body cannot be replayed).
    var isReplayable: Bool { requestEnded && !bodyForwarded }
    /// `[tracing]`: this request's spans; nil when tracing is off.
    package var trace: RequestTrace?
    /// The status the client got (its answer's, or the upstream's), for the server span.
    var responseStatus: Int?
    /// When to look again, as the core said (`watch(now:legTakesMore:)`: the response head's deadline, idle time once it
    /// flows, a stalled body, a sign-out's body). No timer of its own: the transport wakes it (`deadlinePassed(now:)`),
    /// one timer per connection.
    var deadline: NIODeadline?

    init(connection: Connection, transport: any StreamTransport) {
        self.connection = connection
        self.transport = transport
        self.services = connection.handle.services
        // gRPC refusals are an HTTP/2 form: an HTTP/1.1 client gets the plain answer (docs/reference.md §6).
        // An HTTP/1.1 head frames its body: forwarded at once; an HTTP/2 one waits for its read's end
        // (`forwardsAtReadEnd`), so that a request that ended in it goes as one without a body.
        let isHTTP2 = transport.clientVersion == nil
        self.core = ExchangeStateMachine(speaksGRPC: isHTTP2, forwardsAtReadEnd: isHTTP2)
    }

    var request: UpstreamRequestHead.Request? { core.inHand?.request }
    var requestEnded: Bool { core.requestEnded }
    package var isDone: Bool {
        if case .done = state { return true }
        return false
    }

    /// The response version: HTTP/2 streams ignore it; an HTTP/1.x client gets its own.
    var responseVersion: HTTPVersion { transport.clientVersion ?? .http2 }

    /// For an HTTP/2 request, whether a body follows: it did not end before it is forwarded (at the end of the read
    /// that carried its head) or its body is buffered. Nil for an HTTP/1.x request, whose head frames its body.
    var http2RequestHasBody: Bool? {
        transport.clientVersion == nil ? !(requestEnded && bufferedBody.isEmpty) : nil
    }

    // MARK: - What the transport reports

    /// Parts of the request are arriving: an answer decided now may wait for its end until `readComplete()`.
    package func readBegan() {
        core.readBegan(now: .now())
    }

    /// The request's time is when the read that carried its head began: every transport reports `readBegan()` first,
    /// which read the clock (`core.lastReadBegan`).
    package func receivedHead(_ head: HTTPRequestHead) {
        guard case .core = state, case .awaitingHead = core.state else { return }
        let started = services.tracer?.begin(head, start: core.lastReadBegan, clientIP: connection.peer.ip, clientVersion: transport.clientVersion,
                                             on: transport.eventLoop)
        trace = started?.recorder
        perform(core.receivedHead(
            head, clientIP: connection.peer.ip, certificateThumbprint: connection.peer.certificateThumbprint, settings: services.exchange,
            recent: connection.tokenMemory.recent, now: core.lastReadBegan, trace: started?.upstreamPropagation))
    }

    /// A head the transport's reader refused (HTTP2RequestHeadReader): 400 (431 for its size), never judged.
    package func receivedMalformedHead(_ reason: String, status: HTTPResponseStatus) {
        guard case .core = state else { return }
        perform(core.receivedMalformedHead(reason, status: status))
    }

    package func receivedBody(_ buffer: ByteBuffer) {
        switch state {
        case .core: perform(core.receivedBody(buffer))
        case .connecting: bufferedBody.append(buffer)
        case .forwarding(let leg):
            leg.writeBody(buffer)
            bodyForwarded = true
        case .done: break
        }
    }

    package func receivedEnd(trailers: HTTPHeaders?) {
        let action = core.receivedEnd()
        // Sanitized here, for every leg: only an HTTP/2 upstream gets trailers, and never a smuggled identity.
        requestTrailers = trailers.flatMap { services.exchange.upstreamHead.makeTrailers($0) }
        if case .forwarding(let leg) = state {
            leg.writeEnd(trailers: requestTrailers)
            if !core.isInRead { leg.flush() }  // else the read's `readComplete()` does
        }
        perform(action)
    }

    /// The read that carried request parts is over.
    package func readComplete() {
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
        switch state {
        case .forwarding(let leg): leg.read()
        case .core where core.isReadingBody: transport.readRequest()
        case .core, .connecting, .done: break
        }
    }

    /// The client went away, or the stream was reset: the upstream leg is given up.
    func transportClosed() {
        deadline = nil
        if case .forwarding(let leg) = state { leg.finish(completed: false) }
        state = .done
        endTrace(error: "the client went away")
    }

    /// The server span ends (once): with the status the client got, or why it got none whole.
    func endTrace(error: String? = nil) {
        guard let trace else { return }
        let now = NIODeadline.now()
        trace.upstreamEnded(at: now, status: nil, error: error)
        trace.finish(at: now, status: responseStatus, error: error)
    }

    // MARK: - The core's actions

    package var coreHasRequest: Bool {
        if case .core = state { return true }
        return false
    }

    package var coreEventLoop: any EventLoop { transport.eventLoop }

    package func performCoreAction(_ action: ExchangeStateMachine.Action) {
        perform(action)
    }

    func perform(_ action: ExchangeStateMachine.Action) {
        performRecords()
        switch action {
        case .none, .ignored:
            break
        case .cut(let why):
            // The leg is gone or given up already: the client's side ends incomplete.
            state = .done
            deadline = nil
            transport.finish(completed: false)
            endTrace(error: why)
        case .decide, .signOut, .logOut:
            performDecisionAction(action)
        case .readBody(let until):
            armWatchdog(at: until)
            transport.readRequest()
        case .send(let response):
            send(response)
        case .retry(let admission):
            // The same request on a new upstream leg: the core's rule, told whether it can be replayed, said it may go again.
            if case .forwarding = state { connect(admission) }
        case .forward(let admission, let body):
            bufferedBody = body
            connect(admission)
        }
    }

    // MARK: - Answers

    /// A local answer (the core has put a gRPC call's in its trailers-only form), with the request id and its
    /// length. An HTTP/1.1 connection closes after it when the request body was left unread or the answer says so.
    private func send(_ local: LocalResponse) {
        deadline = nil
        state = .done
        responseStatus = Int(local.status.code)
        let requestID = request?.requestID ?? RequestID.acceptOrGenerate(nil)
        // An answer that ends the connection (a request target with no single reading) does so on HTTP/1.1; an
        // HTTP/2 stream ends with its answer anyway, and is reset only when its request has not ended.
        let closesConnection = (local.closeConnection && transport.clientVersion != nil) || !requestEnded
        var headers = local.headers
        RequestIDField.set(requestID, on: &headers)
        // A 304 has no content and says no length (RFC 9110 §8.6: only the 200's would be allowed).
        if core.inHand?.isGRPC != true, local.status != .notModified { headers.replaceOrAdd(name: "content-length", value: String(local.body.utf8.count)) }
        let head = ClientResponseHead.fields(HTTPResponseHead(version: responseVersion, status: local.status, headers: headers))
        if local.body.isEmpty || core.inHand?.isHEAD == true {
            transport.writeHead(head, endStream: true, closesConnection: closesConnection)
        } else {
            transport.writeHead(head, endStream: false, closesConnection: closesConnection)
            transport.writeBody(transport.allocator.buffer(string: local.body))
            transport.writeEnd(trailers: nil)
        }
        transport.flush()
        transport.finish(completed: !closesConnection)
        endTrace()
    }

    // MARK: - Watchdog

    /// Sets the exchange's next deadline (the core's); the transport's timer wakes it then.
    func armWatchdog(at next: NIODeadline) {
        deadline = next
        transport.wake(at: next)
    }

    /// The transport's timer fired: acts if the deadline has passed. Returns the deadline still ahead, if any.
    package func deadlinePassed(now: NIODeadline) -> NIODeadline? {
        guard let deadline else { return nil }
        guard deadline <= now else { return deadline }
        self.deadline = nil
        watchdogFired()
        return self.deadline
    }

    private func watchdogFired() {
        switch core.watch(now: .now(), legTakesMore: legTakesMore) {
        case .responseHeadLate: upstreamFailed(.gatewayTimeout)
        case .stalled: giveUp("the upstream stalled")
        case .bodyStopped: giveUp("the request body stopped")
        case .ahead(let next): armWatchdog(at: next)
        case .nothing: break
        }
    }

    /// Whether the upstream leg takes more of the request body now; nil while it is opening.
    package var legTakesMore: Bool? {
        if case .forwarding(let leg) = state { return leg.isWritable }
        return nil
    }

    /// Cuts the exchange: the leg is given up, the stream reset or the connection closed.
    private func giveUp(_ why: String) {
        if case .forwarding(let leg) = state { leg.finish(completed: false) }
        state = .done
        deadline = nil
        transport.finish(completed: false)
        endTrace(error: why)
    }
}
