package import NIOCore
package import NIOHTTP1
import GatehouseSyntax
import GatehouseRules
package import GatehouseHTTP
package import GatehouseConfig
import GatehouseTokens
package import GatehouseVocabulary
package import GatehousePolicy

/// Builds the head sent upstream, written straight into a `ByteBuffer` in one pass over the
/// client's headers: hop-by-hop and smuggled identity headers are skipped, then what Gatehouse
/// vouches for is added (docs/reference.md §5), so nothing a client sends can remove or fake it.
package struct UpstreamRequestHead {
    package let identityHeaderNames: IdentityHeaderNames
    package let headerMappings: [[HeaderMapping]]  // per provider index
    package let forwardClaimsJSON: Bool
    package var forwardToken: Bool
    let tokenHeaderName: String?
    /// `[listen] client_cert_header`: forwarded only from the trusted proxies that may set it.
    package var forwardedCertificate: ForwardedClientCertificate? = nil
    /// `[assertion]`: the JWT signed for the upstream, sent with every verified identity's fields.
    package var assertion: AssertionSigner? = nil

    package init(
        identityHeaderNames: IdentityHeaderNames, headerMappings: [[HeaderMapping]], forwardClaimsJSON: Bool,
        forwardToken: Bool, tokenHeaderName: String?, forwardedCertificate: ForwardedClientCertificate? = nil,
        assertion: AssertionSigner? = nil
    ) {
        self.identityHeaderNames = identityHeaderNames
        self.headerMappings = headerMappings
        self.forwardClaimsJSON = forwardClaimsJSON
        self.forwardToken = forwardToken
        self.tokenHeaderName = tokenHeaderName
        self.forwardedCertificate = forwardedCertificate
        self.assertion = assertion
    }

    /// The request as forwarded: made once at intake, as the core's `ExchangeRequest` (its subclass, so that a request
    /// is one object): the core, its records and the upstream leg share it with one reference each, not a copy of
    /// every member per hand-over. Nothing changes once the request is judged.
    package class Request {
        /// For `/.gatehouse/check`, the request the fronting proxy describes (set at intake, `describe`).
        package final internal(set) var head: HTTPRequestHead
        package final internal(set) var target: NormalizedTarget
        package final let requestID: String
        package final let clientIP: String
        package final let scheme: String
        final let isWebSocket: Bool
        /// How the request reached the core when not through a door: `ext_authz_grpc`, `ext_authz_http` (a Check).
        package final let via: String?
        /// With `[tracing]`: the trace headers sent on in place of the client's (docs/reference.md §16).
        package final let trace: TracePropagation?
        /// Under a `[[resource]]`: whether the client's token goes on (its `forward_token`); nil: the head's rule.
        /// Set at intake only.
        package final internal(set) var forwardsToken: Bool? = nil
        /// Whether the head has a Connection field (`RequestFieldScan`): without one nothing is nominated hop-by-hop,
        /// and the upstream head does not look for nominations. The head a decision endpoint's proxy describes has
        /// the same fields (`describe`).
        package final let hasConnectionField: Bool

        init(
            head: HTTPRequestHead, target: NormalizedTarget, requestID: String, clientIP: String, scheme: String, isWebSocket: Bool,
            via: String?, trace: TracePropagation?, hasConnectionField: Bool = true
        ) {
            self.hasConnectionField = hasConnectionField
            self.head = head
            self.target = target
            self.requestID = requestID
            self.clientIP = clientIP
            self.scheme = scheme
            self.isWebSocket = isWebSocket
            self.via = via
            self.trace = trace
        }

        /// Becomes the request a decision endpoint's proxy describes, asked on this one (its id, client, scheme kept).
        func describe(_ head: HTTPRequestHead, target: NormalizedTarget) {
            self.head = head
            self.target = target
        }
    }

    /// The head's bytes, and whether the body that follows goes chunked.
    package struct Written {
        package var bytes: ByteBuffer
        package var chunkedBody: Bool
        /// The identity fields of a verified admission as written (a slice of `bytes`): a connection
        /// presenting the same token again writes these instead of encoding the claims again.
        package var identityFields: ByteBuffer?
    }

    /// - Parameters:
    ///   - chunkedBody: frame the body chunked whatever the client's framing was (an HTTP/2
    ///     client's body without a length).
    ///   - identityFields: the identity fields this admission's identity was written with before
    ///     (`Written.identityFields` of the same identity and configuration).
    ///   - headBuffer: the connection's buffer for its heads, taken and kept again (no allocation once warm).
    package func make(
        _ request: Request, admission: Admission, at now: @autoclosure () -> Int64, reusing headBuffer: inout ReusedBuffer,
        allocator: ByteBufferAllocator, chunkedBody forceChunked: Bool = false, identityFields: ByteBuffer? = nil
    ) -> Written {
        var sink = BufferSink(buffer: headBuffer.take(capacity: estimatedSize(request, admission), allocator: allocator))
        sink.buffer.writeString(request.head.method.rawValue)
        sink.buffer.writeInteger(ASCIIByte.space)
        sink.buffer.writeString(request.target.requestURI)
        sink.buffer.writeStaticString(" HTTP/1.1\r\n")
        let chunkedBody = writeFields(request, admission: admission, into: &sink, forceChunked: forceChunked)
        var writtenFields: Range<Int>?
        if case .verified(let identity) = admission {
            if var identityFields {
                sink.buffer.writeBuffer(&identityFields)
            } else {
                let start = sink.buffer.writerIndex
                writeClaimHeaders(identity, into: &sink)
                writtenFields = start..<sink.buffer.writerIndex
            }
            // After the kept fields: it is signed again while they stay the same.
            writeAssertionHeader(identity, at: now(), into: &sink)
        } else {
            writeAdmissionHeaders(admission, at: now(), into: &sink)
        }
        sink.buffer.writeStaticString("\r\n")
        headBuffer.keep(sink.buffer)
        // Sliced once the head is whole: a slice taken earlier shares the storage, and the next write copied it all.
        let written = writtenFields.flatMap { sink.buffer.getSlice(at: $0.lowerBound, length: $0.count) }
        return Written(bytes: sink.buffer, chunkedBody: chunkedBody, identityFields: written)
    }

    /// The header block for an HTTP/2 upstream: the pseudo-header fields (`:authority` from the one Host), then the
    /// fields as for HTTP/1.1, names in lower case, without what HTTP/2 forbids; in three parts (`HTTP2UpstreamHead`).
    /// `identityFields`: the fields the same identity was written with before (`HTTP2UpstreamHead.identityFields` of
    /// the same identity and configuration), given as they are: shared, not copied.
    package func makeHTTP2Head(
        _ request: Request, admission: Admission, at now: @autoclosure () -> Int64, scheme: String,
        identityFields: [NGHTTP2Session.OutboundField]? = nil
    ) -> HTTP2UpstreamHead {
        var sink = HTTP2FieldSink()
        sink.headers.reserveCapacity(request.head.headers.count + 8)
        sink.headers.append((":method", request.head.method.rawValue, true))
        sink.headers.append((":scheme", scheme, true))
        if let host = request.head.headers.first(name: "host") { sink.headers.append((":authority", host, true)) }
        sink.headers.append((":path", request.target.requestURI, true))
        _ = writeFields(request, admission: admission, into: &sink, forceChunked: false)
        var head = HTTP2UpstreamHead()
        if case .verified(let identity) = admission {
            if let identityFields {
                head.identityFields = identityFields
            } else {
                var written = HTTP2FieldSink()
                writeClaimHeaders(identity, into: &written)
                head.identityFields = written.headers
                head.identityFieldsWritten = true
            }
            // After the kept fields, as on HTTP/1.1 (`make`).
            var signed = HTTP2FieldSink()
            writeAssertionHeader(identity, at: now(), into: &signed)
            head.signedFields = signed.headers
        } else {
            writeAdmissionHeaders(admission, at: now(), into: &sink)
        }
        head.fields = sink.headers
        return head
    }

    /// The client's request trailers as forwarded (to an HTTP/2 upstream; HTTP/1.1 upstreams get none):
    /// identity fields in any spelling, the token header, hop-by-hop fields and what a trailer section may
    /// not carry (`HeaderHygiene.isForbiddenInTrailers`) are removed, as from the head; nil when none is left.
    /// docs/security.md P53.
    package func makeTrailers(_ trailers: HTTPHeaders) -> HTTPHeaders? {
        let nominated = HeaderHygiene.connectionNominations(trailers)
        var kept: [(String, String)] = []
        for (name, value) in trailers {
            if HeaderHygiene.isHopByHop(name, nominated: nominated) || identityHeaderNames.isIdentityHeader(name)
                || HeaderHygiene.isForbiddenInTrailers(name) || tokenHeaderName.map({ Self.isNamed(name, $0) }) == true {
                continue
            }
            kept.append((name, value))
        }
        return kept.isEmpty ? nil : HTTPHeaders(kept)
    }

    /// One pass over the client's fields (returns whether the body goes chunked): hop-by-hop, identity and (unless forwarded) token headers
    /// skipped, then `X-Forwarded-*` and the request id added; what Gatehouse vouches for follows
    /// (`writeAdmissionHeaders`). One rule for every protocol: only the sink differs.
    private func writeFields<Sink: UpstreamFieldSink>(
        _ request: Request, admission: Admission, into sink: inout Sink, forceChunked: Bool
    ) -> Bool {
        let headers = request.head.headers
        let nominated = request.hasConnectionField ? HeaderHygiene.connectionNominations(headers) : []
        var hadChunkedBody = false
        var hasContentLength = false
        var hasForwardedFor = false
        var hasForwardedProto = false
        var hasForwardedHost = false
        var host: String?
        var acceptsTrailers = false
        for (name, value) in headers {
            // Traced: the caller's trace headers give way to Gatehouse's (same trace, Gatehouse's span as the parent).
            if request.trace != nil, Self.isTraceHeader(name) { continue }
            switch fate(ofField: name, value, clientIP: request.clientIP, nominated: nominated, forwardToken: request.forwardsToken) {
            case .hopByHop:
                if Self.isNamed(name, "transfer-encoding") { hadChunkedBody = true }
                if Self.isNamed(name, "te"), HeaderHygiene.listsTrailers(value) { acceptsTrailers = true }
            case .identity, .token, .untrustedCertificate, .proof, .requestID:
                break
            case .bearerForm(let bearer):
                sink.add(name, bearer)
            case .forwardedFor:
                hasForwardedFor = true
            case .forward:
                if Self.isNamed(name, "content-length") { hasContentLength = true }
                if Self.isNamed(name, "x-forwarded-proto") { hasForwardedProto = true }
                if Self.isNamed(name, "x-forwarded-host") { hasForwardedHost = true }
                if host == nil, Self.isNamed(name, "host") { host = value }
                sink.add(name, value)
            }
        }
        if request.isWebSocket { sink.addWebSocketUpgrade() }
        if acceptsTrailers { sink.addTrailersAcceptance() }
        // The decoder has de-chunked the body; it is framed again when forwarded.
        let chunkedBody = (hadChunkedBody || forceChunked) && !hasContentLength
        if chunkedBody { sink.add("transfer-encoding", "chunked") }
        sink.addForwardedFor(previous: hasForwardedFor ? headers[canonicalForm: "x-forwarded-for"] : [], clientIP: request.clientIP)
        if !hasForwardedProto { sink.add("X-Forwarded-Proto", request.scheme) }
        if !hasForwardedHost, let host { sink.add("X-Forwarded-Host", host) }
        sink.add(RequestIDField.writtenName, request.requestID)
        if let trace = request.trace {
            sink.add("traceparent", trace.traceParent)
            if let state = trace.traceState { sink.add("tracestate", state) }
        }
        return chunkedBody
    }

    package static func isTraceHeader(_ name: String) -> Bool {
        isNamed(name, "traceparent") || isNamed(name, "tracestate")
    }

    /// What becomes of one of the client's fields on its way upstream: the one rule for every door, and for
    /// a Check (`checkAllowance`).
    package enum FieldFate: Equatable {
        case forward
        /// Hop-by-hop: this connection's, never forwarded.
        case hopByHop
        /// An identity header in any spelling: only Gatehouse says who the caller is.
        case identity
        /// The token, with `forward_token = false`.
        case token
        /// A client-certificate header from outside `trusted_proxies`.
        case untrustedCertificate
        /// The DPoP proof: for Gatehouse only.
        case proof
        /// `Authorization: DPoP <token>` goes on as `Bearer <token>`, so an unmodified service takes it.
        case bearerForm(String)
        /// `X-Forwarded-For` and `X-Request-Id`: written again by Gatehouse.
        case forwardedFor
        case requestID
    }

    /// `forwardToken`: the request's own rule (a `[[resource]]`'s `forward_token`), else the head's.
    package func fate(ofField name: String, _ value: String, clientIP: String, nominated: [[UInt8]], forwardToken: Bool? = nil) -> FieldFate {
        let forwardToken = forwardToken ?? self.forwardToken
        if HeaderHygiene.isHopByHop(name, nominated: nominated) { return .hopByHop }
        if identityHeaderNames.isIdentityHeader(name) { return .identity }
        if !forwardToken && (Self.isNamed(name, "authorization") || tokenHeaderName.map { Self.isNamed(name, $0) } == true) {
            return .token
        }
        if let forwardedCertificate, forwardedCertificate.isHeader(name), !forwardedCertificate.trusts(clientIP) {
            return .untrustedCertificate
        }
        if Self.isNamed(name, "dpop") { return .proof }
        if forwardToken, Self.isNamed(name, "authorization"), let bearer = Self.bearerForm(ofDPoPAuthorization: value) {
            return .bearerForm(bearer)
        }
        if Self.isNamed(name, "x-forwarded-for") { return .forwardedFor }
        if Self.isNamed(name, RequestIDField.name) { return .requestID }
        return .forward
    }

    /// What Gatehouse vouches for: the mapped claims, `X-Auth-Provider`, `X-Auth-Claims`; or
    /// `X-Auth-Guest` for a guest; nothing for a public route. The answer of `/.gatehouse/check`. `now`: the wall
    /// clock's seconds since the epoch, which an assertion is signed with (every `at now` here), read only then: a
    /// request without an assertion to sign reads no clock.
    func addIdentityHeaders(for admission: Admission, at now: @autoclosure () -> Int64, to headers: inout HTTPHeaders) {
        var sink = HeadersFieldSink(headers: headers)
        headers = [:]  // the sink's copy stays the only one: added to in place
        writeAdmissionHeaders(admission, at: now(), into: &sink)
        headers = sink.headers
    }

    /// The identity headers of an admission, in the order they are written, into `sink`.
    package func writeAdmissionHeaders<Sink: IdentityFieldSink>(_ admission: Admission, at now: @autoclosure () -> Int64, into sink: inout Sink) {
        switch admission {
        case .verified(let identity):
            writeClaimHeaders(identity, into: &sink)
            // After the claims' fields (which a connection keeps for the token's next requests): signed again while they stay the same.
            writeAssertionHeader(identity, at: now(), into: &sink)
        case .guest:
            sink.add("X-Auth-Guest", "true")
        case .anonymous:
            break
        }
    }

    /// `[assertion] header` (docs/reference.md §15), when configured.
    private func writeAssertionHeader<Sink: IdentityFieldSink>(_ identity: VerifiedIdentity, at now: @autoclosure () -> Int64, into sink: inout Sink) {
        if let assertion, let value = assertion.assertion(for: identity, now: now()) { sink.add(assertion.settings.header, value) }
    }

    /// What the claims say: the same for every request of one verified token (userinfo enrichment aside). A claim
    /// signed as a string without escapes or as a number, whose text is its own header value, is written from the
    /// token's bytes as it is (no `String` or `JSONValue` made); any other value through `HeaderValueEncoding`, which
    /// gives that same text for such a claim (`IdentityHeaderTests.aClaimWrittenFromTheSignedBytesIsWhatItsEncodingGives`).
    func writeClaimHeaders<Sink: IdentityFieldSink>(_ identity: VerifiedIdentity, into sink: inout Sink) {
        for mapping in headerMappings[identity.providerIndex] {
            if let expression = mapping.expression {
                if let value = expression.headerValue(claims: identity.claims) { sink.add(mapping.name, value) }
                continue
            }
            if mapping.claimPath.utf8.contains(ASCIIByte.dot) {
                if let claim = JSONValue.object(identity.claims).value(atPath: mapping.claimPath), let value = HeaderValueEncoding.encode(claim) {
                    sink.add(mapping.name, value)
                }
                continue
            }
            if sink.takesBytes {
                let verbatim = identity.withPlainClaimText(mapping.claimPath) { text in
                    guard HeaderValueEncoding.isVerbatim(text) else { return false }
                    sink.addVerbatim(mapping.name, text)
                    return true
                }
                if verbatim == true { continue }
            }
            if let claim = identity.claim(mapping.claimPath), let value = HeaderValueEncoding.encode(claim) {
                sink.add(mapping.name, value)
            }
        }
        // Only a token whose binding was proven gets here (SenderConstraints): the key or certificate it is bound to.
        if let confirmation = identity.claim("cnf")?.objectValue {
            if let key = confirmation["jkt"], let value = HeaderValueEncoding.encode(key) { sink.add("X-Auth-Cnf-Jkt", value) }
            if let certificate = confirmation["x5t#S256"], let value = HeaderValueEncoding.encode(certificate) {
                sink.add("X-Auth-Cnf-X5t-S256", value)
            }
        }
        sink.add("X-Auth-Provider", identity.providerName)
        // Base64url: always its own header value.
        if forwardClaimsJSON {
            if sink.takesBytes {
                identity.withEncodedPayload { sink.addVerbatim("X-Auth-Claims", $0) }
            } else {
                sink.add("X-Auth-Claims", identity.encodedPayload)
            }
        }
    }

    /// Room for a usual head at once, without reading each field (a pass over NIO's fields costs two references
    /// per field): a bearer token's worth, an allowance per field, the signed payload if forwarded. A longer head
    /// grows the buffer once, and the connection's `ReusedBuffer` keeps the grown storage for its next heads.
    private func estimatedSize(_ request: Request, _ admission: Admission) -> Int {
        var size = 1024 + request.target.requestURI.utf8.count + 48 * request.head.headers.count
        if forwardClaimsJSON, case .verified(let identity) = admission { size += identity.withEncodedPayload(\.count) }
        if assertion != nil { size += 640 }
        return size
    }

    /// `DPoP <token>` as `Bearer <token>`; nil for any other value.
    private static func bearerForm(ofDPoPAuthorization value: String) -> String? {
        let utf8 = value.utf8
        // The first byte first: a `Bearer` value (nearly every one) is told apart without a view of its prefix.
        guard let first = utf8.first, first | 0x20 == UInt8(ascii: "d") else { return nil }
        guard utf8.count > 5, utf8.prefix(5).elementsEqual("dpop ".utf8, by: { $0 | 0x20 == $1 || ($0 == $1) }) else { return nil }
        return "Bearer " + String(Substring(utf8.dropFirst(5))).trimmingSpaces()
    }

    /// ASCII case-insensitive name comparison (no `_`/`-` folding: that is for identity names).
    private static func isNamed(_ name: String, _ other: String) -> Bool {
        name.utf8.elementsEqualIgnoringASCIICase(other.utf8)
    }
}
