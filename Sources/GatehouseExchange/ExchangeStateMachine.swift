package import NIOCore
package import NIOHTTP1
import GatehouseSyntax
import GatehouseConfig
import GatehouseTokens
package import GatehouseVocabulary
package import GatehousePolicy

/// The life of one request up to its answer or its upstream leg, the same for every door: a door
/// reports what arrived (a head, body, the end, the end of a read, a decision, with the time) and
/// performs the action it gets back (ask the gatekeeper, sign out, send an answer, open the upstream
/// leg, read more), reporting what a call came to as a plain value. Routing, own endpoints, sign-out, the gRPC form of a refusal,
/// what is counted and what goes to the failure log are decided here, once; the doors only frame.
///
/// No I/O: no event loop, no clock, no metric or log call. Time comes in with the events; what is to be
/// counted or logged is left in `records` for the driver (`ExchangeDriving`). One per request in flight
/// (an HTTP/1.1 connection reuses its one for the next request; an HTTP/2 stream has its own).
package struct ExchangeStateMachine {
    /// gRPC refusals are for HTTP/2 clients.
    package let speaksGRPC: Bool
    /// HTTP/2: an admitted request goes upstream once the read that carried its head is over, so that
    /// one that ended in that read is sent as one without a body. An HTTP/1.1 request says its framing in
    /// its head and goes at once (its body, if any, follows as it comes).
    package let forwardsAtReadEnd: Bool
    /// Set for a Check (`CheckDriver`): said in the failure log of its refusals.
    package let via: String?
    package internal(set) var state = State.awaitingHead
    /// The request in hand, from its head on.
    package private(set) var inHand: ExchangeRequest?
    package private(set) var requestEnded = false
    /// Counts requests: a future's report for an earlier request is ignored.
    package private(set) var generation = 0
    /// Between the door's `readBegan` and `readEnded`: its read-complete follows, which flushes what was written
    /// upstream and asks for more of the request (one flush per read, not one per part).
    package private(set) var isInRead = false
    /// When the last read of the request's bytes began: a head's time, and where an upstream leg's stall clock starts.
    package private(set) var lastReadBegan = NIODeadline.uptimeNanoseconds(0)
    /// What this event saw, for the driver to count and log (`takeRecords`).
    var records = ExchangeRecords()
    /// While an MCP message is read (`State.readingMessage`): what its decision takes besides the message.
    var awaitingMessage = AwaitingMessage()

    /// A sign-out is reading its body: the door keeps reading the client.
    package var isReadingBody: Bool {
        switch state {
        case .readingSignOut, .readingLogout, .readingMessage: true
        default: false
        }
    }

    package init(speaksGRPC: Bool, forwardsAtReadEnd: Bool, via: String? = nil) {
        self.via = via
        self.speaksGRPC = speaksGRPC
        self.forwardsAtReadEnd = forwardsAtReadEnd
    }

    /// What was recorded since the last call, for the driver to count and log, and left empty; nil when nothing was
    /// (most events: then nothing is copied).
    package mutating func takeRecords() -> ExchangeRecords? {
        guard !records.isEmpty else { return nil }
        // Moved out, not copied (a copy retains each of its references, and the reset releases them again).
        var taken = ExchangeRecords()
        swap(&taken, &records)
        return taken
    }

    /// Ready for the next request of a keep-alive connection.
    package mutating func reset() {
        state = .awaitingHead
        inHand = nil
        requestEnded = false
    }

    // MARK: - What arrived

    /// Parts are arriving at `now`: an answer decided now may wait for the request's end until `readEnded()`; for a
    /// request the upstream has, the bytes moved.
    package mutating func readBegan(now: NIODeadline) {
        isInRead = true
        lastReadBegan = now
        guard case .forwarding(var forwarding) = state else { return }
        forwarding.lastProgress = now
        forwarding.lastRequestProgress = now
        state = .forwarding(forwarding)
    }

    package mutating func readEnded() -> Action {
        isInRead = false
        switch state {
        case .admitted(let admission, let held):
            return forward(admission, held)
        case .answering(let response):
            return send(response)
        case .awaitingHead, .waiting, .readingSignOut, .readingLogout, .readingMessage, .forwarding, .finished, .modifying:
            return .none
        }
    }

    /// A request head. `recent` is the connection's last verified token (`RecentToken`); `certificateThumbprint`
    /// the connection's TLS client certificate (`SenderEvidence`).
    package mutating func receivedHead(
        _ head: HTTPRequestHead, clientIP: String, certificateThumbprint: String? = nil, routeContext: [String: String] = [:],
        settings: ExchangeSettings, recent: RecentToken?, now: NIODeadline, trace: TracePropagation? = nil
    ) -> Action {
        guard case .awaitingHead = state else { return .ignored(.outOfOrder) }
        generation &+= 1
        switch RequestIntake.read(
            head, clientIP: clientIP, certificateThumbprint: certificateThumbprint, routeContext: routeContext, speaksGRPC: speaksGRPC,
            settings: settings, startedAt: now, via: via, trace: trace)
        {
        case .answer(let refused, let response, let outcome):
            inHand = refused
            records.outcome = ("none", outcome)
            return answer(response)
        case .refuse(let refused, let failure):
            inHand = refused
            return reject(failure, refused)
        case .judge(let judged):
            // The fast path for forwarded requests: still checked for expiry, keys, revocation, route.
            let known = judged.endpoint == nil ? RecentToken.identity(of: recent, for: judged.presentedToken, settings: settings) : nil
            judged.presentsRecentToken = known != nil
            inHand = judged
            if case .backchannelLogout(let provider)? = judged.endpoint {
                let bodyDeadline = now + settings.idleTimeout
                state = .readingLogout(provider: provider, HeldBody(), bodyDeadline: bodyDeadline)
                return .readBody(until: bodyDeadline)
            }
            if let resource = judged.resource, resource.settings.mcp {
                return receivedMCPHead(judged, resource: resource, known: known, context: routeContext, now: now)
            }
            state = .waiting(HeldBody())
            return .decide(judged, recent: known, generation: generation)
        }
    }

    /// A head the door's reader refused (HTTP/2: `HTTP2RequestHeadReader`): 400, never judged.
    package mutating func receivedMalformedHead(_ reason: String, status: HTTPResponseStatus = .badRequest) -> Action {
        guard case .awaitingHead = state else { return .ignored(.outOfOrder) }
        generation &+= 1
        records.outcome = ("none", .badRequest)
        return answer(LocalResponse.malformedRequest(reason, status: status))
    }

    /// Body bytes that arrived before the upstream leg has the request; kept for it (or a sign-out).
    package mutating func receivedBody(_ buffer: ByteBuffer) -> Action {
        switch state {
        case .waiting(var held):
            state = .modifying
            held.append(buffer)
            state = .waiting(held)
        case .admitted(let admission, var held):
            state = .modifying
            held.append(buffer)
            state = .admitted(admission, held)
        case .readingSignOut(let endpoint, let identity, var held, let bodyDeadline):
            state = .modifying
            held.append(buffer)
            state = .readingSignOut(endpoint, identity, held, bodyDeadline: bodyDeadline)
            if held.bytes > SignOutRequest.maxBodyBytes { return send(Self.bodyTooLarge) }
        case .readingLogout(let provider, var held, let bodyDeadline):
            state = .modifying
            held.append(buffer)
            state = .readingLogout(provider: provider, held, bodyDeadline: bodyDeadline)
            if held.bytes > SignOutRequest.maxBodyBytes { return send(Self.bodyTooLarge) }
        case .readingMessage(var held, let bodyDeadline):
            state = .modifying
            held.append(buffer)
            state = .readingMessage(held, bodyDeadline: bodyDeadline)
            if let resource = inHand?.resource, held.bytes > resource.settings.maxMessageBytes {
                records.outcome = ("none", .badRequest)
                return send(MCPMessageIntake.tooLarge(resource))
            }
        case .awaitingHead:
            return .ignored(.outOfOrder)
        case .answering, .forwarding, .finished, .modifying:
            return .ignored(.alreadyDecided)
        }
        return .none
    }

    package mutating func receivedEnd() -> Action {
        requestEnded = true
        switch state {
        case .readingSignOut(let endpoint, let identity, let held, _):
            return signOut(endpoint, identity, held)
        case .readingLogout(let provider, let held, _):
            guard let inHand else { return .ignored(.noRequest) }
            state = .waiting(HeldBody())
            return .logOut(provider: provider, inHand, body: held.joined, generation: generation)
        case .readingMessage(let held, _):
            return judgeMessage(held)
        case .answering(let response):
            return send(response)
        case .awaitingHead, .waiting, .admitted, .forwarding, .finished, .modifying:
            return .none
        }
    }

    // MARK: - Decisions

    /// The gatekeeper's decision for request `generation`, `now` on the monotonic clock and `wallClock` in seconds since
    /// the epoch (what an identity assertion in the answer of `/.gatehouse/check` is signed with).
    package mutating func decided(_ verdict: GateVerdict, generation: Int, now: NIODeadline, wallClock: Int64) -> Action {
        guard generation == self.generation, let inHand, case .waiting(let held) = state else { return .ignored(.lateReport) }
        if inHand.rule.auth != .public { records.authNanoseconds = (now - inHand.startedAt).nanoseconds }
        switch verdict {
        case .admit(let admission):
            if let endpoint = inHand.endpoint { return answerEndpoint(endpoint, admission, inHand, held, now: now, wallClock: wallClock) }
            if isInRead && forwardsAtReadEnd {
                state = .admitted(admission, held)
                return .none
            }
            return forward(admission, held)
        case .reject(let failure):
            return reject(failure, inHand)
        }
    }

    /// The pending decision failed (a key refetch that could not complete).
    package mutating func decisionFailed(generation: Int, now: NIODeadline) -> Action {
        // A refusal signs no assertion: the wall clock is not read.
        decided(.reject(AuthFailure(.keysUnavailable, "key refetch failed")), generation: generation, now: now, wallClock: 0)
    }

    /// A Check's caller gives up at its deadline (gRPC `grpc-timeout`): a decision still pending is refused 503, counted
    /// and logged as any refusal, never left to time out nor allowed later (its decision is then ignored).
    package mutating func callerDeadlinePassed() -> Action {
        guard let inHand else { return .ignored(.noRequest) }
        guard case .waiting = state else { return .ignored(.alreadyDecided) }
        return reject(AuthFailure(.keysUnavailable, "no decision before the caller's deadline (grpc-timeout)"), inHand)
    }

    /// What a back-channel logout came to: a refusal is logged and counted as every refusal (its reason in the failure
    /// log, the logout token's fingerprint), an applied one counted as an endpoint's answer.
    package mutating func loggedOut(_ outcome: LogoutOutcome, generation: Int) -> Action {
        guard generation == self.generation, let inHand, case .waiting = state else { return .ignored(.lateReport) }
        if let refusal = outcome.refusal {
            records.rejection = .init(failure: refusal, request: inHand.request, routeAuth: "none", token: outcome.token)
        } else {
            records.outcome = ("none", .endpoint)
        }
        return answer(outcome.response)
    }

    /// A sign-out's answer, once the store and the provider have answered.
    package mutating func answered(_ response: LocalResponse, generation: Int) -> Action {
        guard generation == self.generation, case .waiting = state else { return .ignored(.lateReport) }
        return answer(response)
    }

    mutating func reject(_ failure: AuthFailure, _ inHand: ExchangeRequest) -> Action {
        records.rejection = .init(
            failure: failure, request: inHand.request, routeAuth: inHand.routeAuth, token: inHand.presentedToken, mcp: inHand.mcp)
        let challenge = inHand.resource.map { AuthErrorResponse.ResourceChallenge(metadataURL: $0.metadataURL, scopes: inHand.rule.scopes) }
        // A session another identity owns is answered as an ended one is (the MCP transport's 404): nothing is told.
        var response = failure.reason == .sessionMismatch
            ? LocalResponse.json(.notFound, MCPSessionIntake.notFoundJSON)
            : LocalResponse.refusal(failure, requestID: inHand.requestID, retryAfterSeconds: ExchangeSettings.retryAfterSeconds, resource: challenge)
        // The decision endpoint's caller may not see the body (nginx auth_request): the reason as a header too.
        if inHand.endpoint == .check { response.headers.add(name: "X-Gatehouse-Reason", value: failure.reason.rawValue) }
        return answer(response)
    }

    /// An own endpoint the request was admitted to: answered here. Counted as `endpoint`; a
    /// rejection was counted (and logged) like any other.
    private mutating func answerEndpoint(
        _ endpoint: OwnEndpoint, _ admission: Admission, _ inHand: ExchangeRequest, _ held: HeldBody, now: NIODeadline,
        wallClock: Int64
    ) -> Action {
        records.outcome = ("none", .endpoint)
        switch (endpoint, admission) {
        case (.check, _):
            var response = LocalResponse.json(.ok, "{\"allowed\":true}")
            inHand.settings.upstreamHead.addIdentityHeaders(for: admission, at: wallClock, to: &response.headers)
            return answer(response)
        case (.jwks, _):
            // Answered by RequestIntake without judging; the same answer if it ever got here.
            return answer(LocalResponse.publishedJWKS(inHand.settings.upstreamHead.assertion, answering: inHand.request.head))
        case (.userinfo, .verified(let identity)):
            return answer(LocalResponse.json(.ok, OwnEndpoint.userinfoJSON(identity)))
        case (.signout, .verified(let identity)), (.signoutEverywhere, .verified(let identity)):
            if requestEnded { return signOut(endpoint, identity, held) }
            let bodyDeadline = now + inHand.settings.idleTimeout
            state = .readingSignOut(endpoint, identity, held, bodyDeadline: bodyDeadline)
            return .readBody(until: bodyDeadline)
        case (.userinfo, _), (.signout, _), (.signoutEverywhere, _), (.backchannelLogout, _):
            // Their rule is `required`: only a verified identity gets here.
            return answer(LocalResponse.json(.unauthorized, "{\"error\":\"invalid_token\"}"))
        }
    }

    /// The revocation (`SignOutResponder`) with the body read: answered when it is stored.
    private mutating func signOut(_ endpoint: OwnEndpoint, _ identity: VerifiedIdentity, _ held: HeldBody) -> Action {
        guard let inHand else { return .ignored(.noRequest) }
        state = .waiting(HeldBody())
        return .signOut(endpoint, identity, inHand, body: held.joined, generation: generation)
    }

    // MARK: - The upstream leg

    /// The upstream leg failed before a response head: 502 / 504 (for a gRPC call UNAVAILABLE /
    /// DEADLINE_EXCEEDED). Not an authentication failure, so nothing in the failure log. After the head: a cut.
    package mutating func upstreamFailed(_ status: HTTPResponseStatus) -> Action {
        guard let inHand else { return .ignored(.noRequest) }
        if case .forwarding(let forwarding) = state, forwarding.responseStarted {
            state = .finished
            return .cut(why: "the upstream failed mid-response")
        }
        records.outcome = (inHand.routeAuth, .upstreamError)
        return answer(LocalResponse.upstreamFailure(status, requestID: inHand.requestID))
    }

    /// The upstream leg went away before a byte of answer. It is tried once more, if Gatehouse can send
    /// the whole request again (`replayable`: it ended and none of its body was sent), when the upstream says
    /// it did not process it (a refused stream, RFC 9113 §8.7: any method), or when a pooled connection it
    /// closed as we reused it took it without a byte of answer (it may have acted: idempotent methods
    /// only, RFC 9110 §9.2.2). Else 502. Once the response's head went to the client, a loss is a cut: nothing
    /// can take that response's place.
    package mutating func upstreamLost(_ loss: UpstreamLoss, replayable: Bool) -> Action {
        guard let inHand else { return .ignored(.noRequest) }
        guard case .forwarding(var forwarding) = state else { return .ignored(.alreadyDecided) }
        guard !forwarding.responseStarted else {
            state = .finished
            return .cut(why: "the upstream connection was lost mid-response")
        }
        let safe = switch loss {
        case .refused: true
        case .closedOnReuse: RequestMethods.isIdempotent(inHand.head.method)
        case .failed: false
        }
        if safe && replayable && !forwarding.hasRetried, let admission = inHand.admission {
            forwarding.hasRetried = true
            state = .forwarding(forwarding)
            return .retry(admission)
        }
        return upstreamFailed(.badGateway)
    }

    /// An upstream leg has the request: its response head must come by the deadline returned, `[upstream] timeout`
    /// after the first leg started. A retry's leg keeps the first one's: the client waits for one answer, not one per
    /// attempt. (From the head on, the response runs as long as its bytes move: `watch(now:legTakesMore:)`.)
    @discardableResult
    package mutating func upstreamLegStarted(now: NIODeadline) -> NIODeadline? {
        guard let inHand, case .forwarding(var forwarding) = state else { return nil }
        let deadline = forwarding.responseDeadline ?? now + inHand.settings.responseTimeout
        forwarding.responseDeadline = deadline
        state = .forwarding(forwarding)
        return deadline
    }

    /// Time for `watch(now:legTakesMore:)`: what moved, when (request bytes: `readBegan(now:)`).
    package mutating func progressed(_ progress: Progress, now: NIODeadline) {
        guard case .forwarding(var forwarding) = state else { return }
        switch progress {
        case .responseBytes: forwarding.lastProgress = now
        case .upstreamTakesMore: forwarding.lastRequestProgress = now
        }
        state = .forwarding(forwarding)
    }

    /// The upstream's response head was relayed at `now`.
    /// The upstream's response head came: from here the response may run for minutes (gRPC streaming), bounded by
    /// idle time, not length. Returns when to look again (`watch(now:legTakesMore:)`).
    @discardableResult
    package mutating func upstreamResponseStarted(now: NIODeadline) -> NIODeadline? {
        guard let inHand, case .forwarding(var forwarding) = state else { return nil }
        forwarding.responseStarted = true
        forwarding.lastProgress = now
        state = .forwarding(forwarding)
        return now + inHand.settings.idleTimeout
    }

    /// Whether an interim (1xx) head from the upstream is relayed: to an HTTP/1.1 client, which may wait for
    /// `100 Continue` before sending its body; never to an HTTP/1.0 one, which would take it for the answer
    /// (RFC 9110 §15.2), nor on an HTTP/2 stream (the HTTP/2 door writes one head per stream), nor after the final
    /// head.
    package var relaysInformational: Bool {
        guard let version = inHand?.head.version, case .forwarding(let forwarding) = state, !forwarding.responseStarted else { return false }
        return version.major == 1 && version.minor >= 1
    }

    /// The upstream answered 101. A tunnel (true) for the WebSocket upgrade the request asked for, counted as
    /// forwarded; an upgrade nobody asked for, or one after the response's head, is the upstream's fault (false:
    /// `upstreamFailed(.badGateway)`).
    package mutating func upstreamSwitchedProtocols() -> Bool {
        guard let inHand, inHand.request.isWebSocket, case .forwarding(let forwarding) = state, !forwarding.responseStarted else { return false }
        state = .finished
        records.outcome = (inHand.routeAuth, .forwarded)
        return true
    }

    /// The upstream's response went through whole: nothing more to do but count it.
    package mutating func upstreamCompleted(now: NIODeadline) -> Action {
        guard let inHand else { return .ignored(.noRequest) }
        state = .finished
        records.upstreamNanoseconds = (now - inHand.startedAt).nanoseconds
        records.outcome = (inHand.routeAuth, .forwarded)
        return .none
    }

    // MARK: - Actions

    /// Answers at once once the request has ended or outside a read; else when the read is over.
    mutating func answer(_ response: LocalResponse) -> Action {
        if requestEnded || !isInRead { return send(response) }
        state = .answering(response)
        return .none
    }

    /// A sign-out's or logout's body over 16 KiB: 413, and the connection closed (the rest is not read).
    private static var bodyTooLarge: LocalResponse {
        var response = LocalResponse.json(.payloadTooLarge, "{\"error\":\"invalid_request\",\"error_description\":\"body too large\"}")
        response.closeConnection = true
        return response
    }

    private mutating func send(_ response: LocalResponse) -> Action {
        state = .finished
        guard let inHand, inHand.isGRPC else { return .send(response) }
        return .send(GRPCRefusal.response(for: response, message: response.grpcMessage ?? GRPCRefusal.defaultMessage(response.status)))
    }

    private mutating func forward(_ admission: Admission, _ held: HeldBody) -> Action {
        state = .forwarding(Forwarding(since: lastReadBegan))
        inHand?.admission = admission
        // A Check's allowance is its answer: counted now, where a door's request is counted once the upstream answers.
        if via != nil, let inHand { records.outcome = (inHand.routeAuth, .forwarded) }
        return .forward(admission, bufferedBody: held.buffers)
    }
}
