import NIOCore
import NIOHTTP1
import GatehouseSyntax
import GatehouseTokens
import GatehouseConfig
import GatehouseVocabulary
package import GatehousePolicy

/// The first step of every request, on both doors: target, Host, request id, token, route or own
/// endpoint. A request whose head decides its answer before any token is looked at (a bad target or
/// Host, an unknown own endpoint, a method it does not take) is answered here.
enum RequestIntake {
    /// What becomes of a request at intake: judged, or answered at once.
    enum Disposition {
        case judge(ExchangeRequest)
        /// Refused before its token is looked at (an MCP server's disallowed `Origin`): logged and counted as every refusal.
        case refuse(ExchangeRequest, AuthFailure)
        /// Answered without judging: counted with this outcome, never in the failure log.
        case answer(ExchangeRequest, LocalResponse, RequestOutcome)
    }

    static func read(
        _ head: HTTPRequestHead, clientIP: String, certificateThumbprint: String? = nil, routeContext: [String: String] = [:],
        speaksGRPC: Bool, settings: ExchangeSettings,
        startedAt: NIODeadline, via: String? = nil, trace: TracePropagation? = nil
    ) -> Disposition {
        let requestID = RequestID.acceptOrGenerate(head.headers.first(name: RequestIDField.name))
        let fields = RequestFieldScan(head.headers)
        let (token, scheme) = BearerToken.extractWithScheme(
            authorization: fields.authorization, authorizationCount: fields.authorizationCount, from: head.headers,
            cookieName: settings.tokenCookie, headerName: settings.tokenHeader)
        // The proof header is only looked for when the scheme asks for one: a bearer request pays nothing.
        let evidence = SenderEvidence(
            scheme: scheme, proof: scheme == .dpop ? SenderEvidence.proofHeader(in: head.headers) : .absent,
            certificateThumbprint: certificateThumbprint, clientIP: clientIP)
        func makeRequest(_ target: NormalizedTarget, rule: RouteRule = RouteRule.defaultRule, isWebSocket: Bool = false) -> ExchangeRequest {
            ExchangeRequest(
                head: head, target: target, requestID: requestID, clientIP: clientIP, scheme: settings.scheme, isWebSocket: isWebSocket,
                via: via, trace: trace, rule: rule, endpoint: nil, token: token, evidence: evidence, isHEAD: head.method == .HEAD,
                // gRPC refusals are an HTTP/2 form: an HTTP/1.1 client gets the plain answer (docs/reference.md §6).
                isGRPC: speaksGRPC && GRPCRefusal.isGRPC(head.headers), settings: settings, startedAt: startedAt,
                hasConnectionField: fields.hasConnectionField)
        }
        guard let target = PathNormalizer.normalize(head.uri), fields.hasValidHost(version: head.version) else {
            var response = LocalResponse.plain(.badRequest, "bad request target or Host")
            response.closeConnection = true
            return .answer(makeRequest(NormalizedTarget.root), response, .badRequest)
        }
        guard OwnEndpoint.isOwn(target.path) else {
            let host = settings.routes.usesHosts ? head.headers.first(name: "host") : nil
            let rule = settings.routes.match(method: head.method.rawValue, path: target.path, host: host?[...], context: routeContext)
            let judged = makeRequest(target, rule: rule, isWebSocket: isWebSocketUpgrade(head))
            // A `when` rule reads the host too: looked up only for such a route when no route needed it.
            judged.routingHost = host ?? (rule.condition != nil ? head.headers.first(name: "host") : nil)
            guard !settings.resources.isEmpty else { return .judge(judged) }
            let resourceHost = (judged.routingHost ?? head.headers.first(name: "host"))?[...]
            if let published = settings.resources.metadata(host: resourceHost, path: target.path) {
                return .answer(judged, ResourceMetadataAnswer.response(published, method: head.method), .endpoint)
            }
            return underResource(judged, host: resourceHost, path: target.path)
        }
        // An own endpoint: its own path (never its query) is what the failure log records. They answer on the doors
        // only: a Check (`via`) for one is refused as an unknown path.
        let own = makeRequest(NormalizedTarget(path: target.path, query: nil))
        guard via == nil, let endpoint = OwnEndpoint(path: target.path), settings.opens(endpoint) else {
            return .answer(own, LocalResponse.json(.notFound, "{\"error\":\"not_found\"}"), .endpoint)
        }
        guard endpoint.allows(head.method) else {
            var response = LocalResponse.json(.methodNotAllowed, "{\"error\":\"method_not_allowed\"}")
            response.headers.add(name: "Allow", value: endpoint.allowHeader)
            return .answer(own, response, .endpoint)
        }
        if endpoint == .jwks {
            return .answer(own, LocalResponse.publishedJWKS(settings.upstreamHead.assertion, answering: head), .endpoint)
        }
        own.endpoint = endpoint
        if endpoint == .check {
            guard let described = OwnEndpoint.describedRequest(head) else {
                return .answer(own, LocalResponse.json(.badRequest, "{\"error\":\"invalid_request\"}"), .badRequest)
            }
            own.describe(described.head, target: described.target)
            // The host of the described request: `X-Forwarded-Host`, believed as `X-Forwarded-Uri` is (the proxy in front
            // sets both), else the host the decision was asked on.
            let host = head.headers.first(name: "x-forwarded-host") ?? head.headers.first(name: "host")
            own.rule = settings.routes.match(method: described.head.method.rawValue, path: described.target.path, host: host?[...])
            own.routingHost = host
            if !settings.resources.isEmpty { return underResource(own, host: host?[...], path: described.target.path) }
        }
        return .judge(own)
    }

    /// A request under a `[[resource]]` is judged with it (audience binding, its challenge); an MCP server's refuses a
    /// browser `Origin` it does not allow before any token is looked at (docs/reference.md §17.5). No `Origin` is a
    /// client that is not a browser.
    private static func underResource(_ judged: ExchangeRequest, host: Substring?, path: String) -> Disposition {
        guard let resource = judged.settings.resources.resource(host: host, path: path) else { return .judge(judged) }
        judged.resource = resource
        judged.forwardsToken = resource.forwardsToken
        if resource.settings.mcp, let origin = judged.head.headers.first(name: "origin"), !resource.allowsOrigin(origin) {
            let shown = LogText.truncated(origin, maxBytes: 128)
            return .refuse(judged, AuthFailure(.originNotAllowed, "Origin \(shown) is not allowed by resource \(resource.settings.url)"))
        }
        return .judge(judged)
    }

    private static func isWebSocketUpgrade(_ head: HTTPRequestHead) -> Bool {
        guard head.method == .GET, let upgrade = head.headers.first(name: "upgrade"), upgrade.lowercased() == "websocket" else {
            return false
        }
        return head.headers[canonicalForm: "connection"].contains { $0.lowercased() == "upgrade" }
    }
}

extension NormalizedTarget {
    package static let root = PathNormalizer.normalize("/")!  // safe: a constant valid target
}
