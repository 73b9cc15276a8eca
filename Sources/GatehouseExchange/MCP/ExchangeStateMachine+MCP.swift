import NIOCore
import NIOHTTP1
import GatehouseConfig
import GatehouseTokens
import GatehouseSyntax
import GatehouseVocabulary
import GatehousePolicy

/// An MCP server's requests (docs/reference.md §17.3, §17.4): the JSON-RPC message read before the decision, and the
/// session the server's answer makes, uses or ends.
extension ExchangeStateMachine {
    /// A request to an MCP server: a JSON POST is read whole before it is judged (`MCPMessage`); a request whose rule
    /// would depend on a message it cannot carry here (the decision endpoint's) is refused; anything else is judged now.
    mutating func receivedMCPHead(
        _ judged: ExchangeRequest, resource: ProtectedResource, known: VerifiedIdentity?, context: [String: String], now: NIODeadline
    ) -> Action {
        let head = judged.head
        guard head.method == .POST, MCPMessageIntake.isJSON(head.headers) else {
            state = .waiting(HeldBody())
            return .decide(judged, recent: known, generation: generation)
        }
        if judged.endpoint == .check {
            let host = judged.routingHost?[...]
            if judged.settings.routes.needsMessage(method: head.method.rawValue, path: judged.request.target.path, host: host, context: context) {
                return reject(AuthFailure(.forbidden, "the route needs the JSON-RPC message, which the decision endpoint does not get"), judged)
            }
            state = .waiting(HeldBody())
            return .decide(judged, recent: known, generation: generation)
        }
        if let length = MCPMessageIntake.declaredLength(head.headers), length > resource.settings.maxMessageBytes {
            records.outcome = ("none", .badRequest)
            return answer(MCPMessageIntake.tooLarge(resource))
        }
        let deadline = now + judged.settings.idleTimeout
        awaitingMessage = AwaitingMessage(known: known, context: context)
        state = .readingMessage(HeldBody(), bodyDeadline: deadline)
        return .readBody(until: deadline)
    }

    /// The MCP message read whole: refused 400 in JSON-RPC's form, or the route matched again with it and the request judged.
    mutating func judgeMessage(_ held: HeldBody) -> Action {
        guard let inHand else { return .ignored(.noRequest) }
        // Moved out of `awaitingMessage` (no copy of the identity or the context).
        var known: VerifiedIdentity?
        swap(&known, &awaitingMessage.known)
        var context: [String: String] = [:]
        swap(&context, &awaitingMessage.context)
        switch MCPMessageIntake.read(held.buffers) {
        case .failure(let refusal):
            records.outcome = ("none", .badRequest)
            return answer(LocalResponse.json(.badRequest, refusal.responseJSON))
        case .success(let message):
            inHand.mcp = message
            let settings = inHand.settings
            let host = settings.routes.usesHosts ? inHand.head.headers.first(name: "host") : nil
            inHand.rule = settings.routes.match(
                method: inHand.head.method.rawValue, path: inHand.request.target.path, host: host?[...], context: context, mcp: message)
            if inHand.routingHost == nil && inHand.rule.condition != nil { inHand.routingHost = inHand.head.headers.first(name: "host") }
            state = .waiting(held)
            return .decide(inHand, recent: known, generation: generation)
        }
    }

    /// Whether the upstream's answer may make, use or end an MCP session (the request is under an MCP resource): the
    /// driver then reports its status and session id (`upstreamAnswered`).
    package var bindsSessions: Bool { inHand?.bindsSessions == true }

    /// An MCP server answered `status`, with `sessionID` in `Mcp-Session-Id`: a session it made or the caller used is
    /// bound to the verified caller, one the caller ended (a `DELETE`) is unbound; recorded for the driver (docs/reference.md §17.4).
    package mutating func upstreamAnswered(status: Int, sessionID: String?) {
        guard let inHand, let resource = inHand.resource, resource.settings.mcp, (200..<300).contains(status) else { return }
        // Most answers name no session: the identity is looked at only when one is made, used or ended.
        let requested = inHand.head.headers.first(name: "mcp-session-id")
        let ends = inHand.head.method == .DELETE && requested != nil
        guard let id = ends ? requested : sessionID ?? requested, ends || MCPSessionIntake.isValidID(id),
              case .verified(let identity)? = inHand.admission
        else { return }
        let owner = MCPSessionOwner.of(identity)
        records.session = ends
            ? .end(id: id, owner: owner)
            : .bind(id: id, owner: owner, ttlSeconds: resource.settings.sessionTTL.components.seconds)
    }
}

/// What an MCP message's decision takes besides the message, while the message is read: the connection's last verified
/// identity of the token the request presents, and a Check's route context.
struct AwaitingMessage {
    var known: VerifiedIdentity?
    var context: [String: String] = [:]
}
