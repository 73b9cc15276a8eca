import NIOCore
import NIOHTTP1

/// Builds the head sent upstream, written straight into a `ByteBuffer` in one pass over the
/// client's headers: hop-by-hop and smuggled identity headers are skipped, then what Gatehouse
/// vouches for is added (docs/reference.md §5), so nothing a client sends can remove or fake it.
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

    /// The head's bytes, and whether the body that follows goes chunked.
    struct Written {
        var bytes: ByteBuffer
        var chunkedBody: Bool
    }

    func make(_ request: Request, admission: Gatekeeper.Admission, allocator: ByteBufferAllocator) -> Written {
        let headers = request.head.headers
        var buffer = allocator.buffer(capacity: estimatedSize(request, admission))
        buffer.writeString(request.head.method.rawValue)
        buffer.writeInteger(ASCIIByte.space)
        buffer.writeString(request.target.requestURI)
        buffer.writeStaticString(" HTTP/1.1\r\n")

        let nominated = HeaderHygiene.connectionNominations(headers)
        var hadChunkedBody = false
        var hasContentLength = false
        var hasForwardedFor = false
        var hasForwardedProto = false
        var hasForwardedHost = false
        var host: String?
        for (name, value) in headers {
            if HeaderHygiene.isHopByHop(name, nominated: nominated) {
                if Self.isNamed(name, "transfer-encoding") { hadChunkedBody = true }
                continue
            }
            if identityHeaderNames.isIdentityHeader(name) { continue }
            if !forwardToken && (Self.isNamed(name, "authorization") || tokenHeaderName.map { Self.isNamed(name, $0) } == true) {
                continue
            }
            if Self.isNamed(name, "x-forwarded-for") {
                hasForwardedFor = true
                continue
            }
            if Self.isNamed(name, "x-request-id") { continue }
            if Self.isNamed(name, "content-length") { hasContentLength = true }
            if Self.isNamed(name, "x-forwarded-proto") { hasForwardedProto = true }
            if Self.isNamed(name, "x-forwarded-host") { hasForwardedHost = true }
            if host == nil, Self.isNamed(name, "host") { host = value }
            HTTPHeadWriter.writeField(name, value, into: &buffer)
        }
        if request.isWebSocket { buffer.writeStaticString("Upgrade: websocket\r\nConnection: upgrade\r\n") }
        // The decoder has de-chunked the body; it is framed again when forwarded.
        let chunkedBody = hadChunkedBody && !hasContentLength
        if chunkedBody { buffer.writeStaticString("transfer-encoding: chunked\r\n") }

        buffer.writeStaticString("X-Forwarded-For: ")
        let previous = hasForwardedFor ? headers[canonicalForm: "x-forwarded-for"] : []
        if !previous.isEmpty {
            buffer.writeString(previous.joined(separator: ", "))
            buffer.writeStaticString(", ")
        }
        buffer.writeString(request.clientIP)
        buffer.writeStaticString("\r\n")
        if !hasForwardedProto { HTTPHeadWriter.writeField("X-Forwarded-Proto", request.scheme, into: &buffer) }
        if !hasForwardedHost, let host { HTTPHeadWriter.writeField("X-Forwarded-Host", host, into: &buffer) }
        HTTPHeadWriter.writeField("X-Request-Id", request.requestID, into: &buffer)
        if case .verified(let identity) = admission {
            forEachIdentityHeader(identity) { HTTPHeadWriter.writeField($0, $1, into: &buffer) }
        } else if case .guest = admission {
            buffer.writeStaticString("X-Auth-Guest: true\r\n")
        }
        buffer.writeStaticString("\r\n")
        return Written(bytes: buffer, chunkedBody: chunkedBody)
    }

    /// What Gatehouse vouches for: the mapped claims, `X-Auth-Provider`, `X-Auth-Claims`; or
    /// `X-Auth-Guest` for a guest; nothing for a public route. The answer of `/.gatehouse/check`.
    func addIdentityHeaders(for admission: Gatekeeper.Admission, to headers: inout HTTPHeaders) {
        switch admission {
        case .anonymous:
            break
        case .guest:
            headers.add(name: "X-Auth-Guest", value: "true")
        case .verified(let identity):
            forEachIdentityHeader(identity) { headers.add(name: $0, value: $1) }
        }
    }

    private func forEachIdentityHeader(_ identity: VerifiedIdentity, _ body: (String, String) -> Void) {
        for mapping in headerMappings[identity.providerIndex] {
            let claim: JSONValue? = mapping.claimPath.contains(".")
                ? JSONValue.object(identity.claims).value(atPath: mapping.claimPath)
                : identity.claims[mapping.claimPath]
            if let claim, let value = HeaderValueEncoding.encode(claim) {
                body(mapping.name, value)
            }
        }
        body("X-Auth-Provider", identity.providerName)
        if forwardClaimsJSON { body("X-Auth-Claims", identity.encodedPayload) }
    }

    /// Room for the whole head at once (no regrowth while writing): the client's fields, the
    /// signed payload if forwarded, and a margin for the rest.
    private func estimatedSize(_ request: Request, _ admission: Gatekeeper.Admission) -> Int {
        var size = 512 + request.target.requestURI.utf8.count
        for (name, value) in request.head.headers { size += name.utf8.count + value.utf8.count + 4 }
        if forwardClaimsJSON, case .verified(let identity) = admission { size += identity.encodedPayload.utf8.count }
        return size
    }

    /// ASCII case-insensitive name comparison (no `_`/`-` folding: that is for identity names).
    private static func isNamed(_ name: String, _ other: String) -> Bool {
        name.utf8.elementsEqualIgnoringASCIICase(other.utf8)
    }
}
