import NIOCore
import NIOHTTP1

/// Builds the head sent upstream: hop-by-hop and smuggled identity headers out first, then what
/// Gatehouse vouches for (INTERFACE.md §5), so nothing a client sends can remove or fake it.
struct UpstreamRequestHead {
    let identityHeaderNames: IdentityHeaderNames
    let headerMappings: [[HeaderMapping]]  // per provider index
    let forwardClaimsJSON: Bool
    let forwardToken: Bool
    let tokenHeaderName: String?

    struct Request {
        var head: HTTPRequestHead
        var target: NormalizedTarget
        var requestID: String
        var clientIP: String
        var scheme: String
        var isWebSocket: Bool
    }

    func make(_ request: Request, admission: Gatekeeper.Admission) -> HTTPRequestHead {
        var headers = request.head.headers
        let hadChunkedBody = headers.contains(name: "transfer-encoding")
        HeaderHygiene.removeHopByHop(&headers, keepWebSocketUpgrade: request.isWebSocket)
        HeaderHygiene.removeIdentityHeaders(&headers, names: identityHeaderNames)
        if !forwardToken {
            headers.remove(name: "authorization")
            if let tokenHeaderName { headers.remove(name: tokenHeaderName) }
        }
        // The decoder has de-chunked the body; frame it again ourselves (the encoder's automatic
        // framing would drop a body on methods it thinks have none, e.g. TRACE: a smuggling risk).
        if hadChunkedBody && !headers.contains(name: "content-length") {
            headers.add(name: "transfer-encoding", value: "chunked")
        }
        appendForwarded(&headers, request)
        addIdentityHeaders(for: admission, to: &headers)
        return HTTPRequestHead(version: .http1_1, method: request.head.method, uri: request.target.requestURI, headers: headers)
    }

    private func appendForwarded(_ headers: inout HTTPHeaders, _ request: Request) {
        let previous = headers[canonicalForm: "x-forwarded-for"]
        headers.remove(name: "x-forwarded-for")
        let chain = previous.isEmpty ? request.clientIP : previous.joined(separator: ", ") + ", " + request.clientIP
        headers.add(name: "X-Forwarded-For", value: chain)
        if !headers.contains(name: "x-forwarded-proto") { headers.add(name: "X-Forwarded-Proto", value: request.scheme) }
        if !headers.contains(name: "x-forwarded-host"), let host = headers.first(name: "host") {
            headers.add(name: "X-Forwarded-Host", value: host)
        }
        headers.replaceOrAdd(name: "X-Request-Id", value: request.requestID)
    }

    /// What Gatehouse vouches for: the mapped claims, `X-Auth-Provider`, `X-Auth-Claims`; or
    /// `X-Auth-Guest` for a guest; nothing for a public route. Also the answer of `/.gatehouse/check`.
    func addIdentityHeaders(for admission: Gatekeeper.Admission, to headers: inout HTTPHeaders) {
        switch admission {
        case .anonymous:
            break
        case .guest:
            headers.add(name: "X-Auth-Guest", value: "true")
        case .verified(let identity):
            addIdentity(&headers, identity)
        }
    }

    private func addIdentity(_ headers: inout HTTPHeaders, _ identity: VerifiedIdentity) {
        for mapping in headerMappings[identity.providerIndex] {
            let claim: JSONValue? = mapping.claimPath.contains(".")
                ? JSONValue.object(identity.claims).value(atPath: mapping.claimPath)
                : identity.claims[mapping.claimPath]
            if let claim, let value = HeaderValueEncoding.encode(claim) {
                headers.add(name: mapping.name, value: value)
            }
        }
        headers.add(name: "X-Auth-Provider", value: identity.providerName)
        if forwardClaimsJSON { headers.add(name: "X-Auth-Claims", value: identity.encodedPayload) }
    }
}
