import NIOCore
import NIOHTTP1
import GatehouseSyntax
import GatehouseAuth
import GatehouseExchange
import GatehouseProxy
import GatehouseVocabulary

/// One request on the `[ext_authz]` port, whichever HTTP it came by (`ExtAuthzHTTP1Handler`, `ExtAuthzHTTP2Stream`):
/// gRPC `envoy.service.auth.v3.Authorization/Check` and `grpc.health.v1.Health/Check`, or the HTTP protocol (Envoy's
/// `http_service`) for any other request. The decision is the core's (`CheckDriver`); this reads the call and puts
/// the verdict in the protocol's form.
struct ExtAuthzResponder {
    static let checkMethod = "/envoy.service.auth.v3.Authorization/Check"
    static let healthMethod = "/grpc.health.v1.Health/Check"

    /// A request as the doors hand it over.
    struct Request {
        package var method: HTTPMethod
        package var uri: String
        /// The regular fields, `host` included (an HTTP/2 request's `:authority`).
        package var headers: HTTPHeaders
        package var body: ByteBuffer?
        /// The body went past `ExtAuthzContext.maxCheckRequestBytes` and was dropped.
        package var bodyTooLarge: Bool
        /// The caller's address (Envoy's).
        var peerIP: String
        package var startedAt: NIODeadline
        /// Came over HTTP/2 (gRPC needs it).
        package var isHTTP2: Bool
    }

    /// What the door writes back.
    enum Answer: Sendable {
        /// A gRPC response: 200, `content-type: application/grpc`, the message if any, then `grpc-status` (and
        /// `grpc-message`) trailers.
        case grpc(message: [UInt8]?, status: Int, statusMessage: String?)
        case http(status: HTTPResponseStatus, headers: HTTPHeaders, body: String)
    }

    /// An answer now, or once the Check's decision has come (`CheckDriver.Judged`).
    typealias EventualAnswer = Eventual<Answer>

    let context: ExtAuthzContext

    /// - Parameter tokenMemory: the connection's last verified token (the doors' fast path for a repeated token).
    func respond(to request: Request, tokenMemory: ConnectionTokenMemory, on eventLoop: any EventLoop) -> EventualAnswer {
        // A gRPC answer is HTTP 200, which Envoy's HTTP protocol reads as "allow": so only the two methods' own calls
        // get one (HTTP/2, POST, exactly their path, gRPC's content-type and `te: trailers`, which Envoy's HTTP
        // protocol never passes on). Anything else is the HTTP protocol, judged by the core.
        guard request.isHTTP2, request.method == .POST, request.uri == Self.checkMethod || request.uri == Self.healthMethod,
              request.headers.first(name: "te")?.utf8.elementsEqualIgnoringASCIICase("trailers".utf8) == true,
              request.headers.first(name: "content-type")?.utf8.starts(with: "application/grpc".utf8) == true
        else { return answerHTTPProtocol(request, tokenMemory: tokenMemory, on: eventLoop) }
        return request.uri == Self.checkMethod ? answerCheck(request, tokenMemory: tokenMemory, on: eventLoop) : .now(answerHealth(request))
    }

    // MARK: - gRPC

    private func answerCheck(_ request: Request, tokenMemory: ConnectionTokenMemory, on eventLoop: any EventLoop) -> EventualAnswer {
        let check: CheckRequest
        do {
            guard !request.bodyTooLarge else { throw ProtobufReader.Malformed("CheckRequest over \(ExtAuthzContext.maxCheckRequestBytes) bytes") }
            guard let body = request.body, let message = GRPCMessageFraming.singleMessage(in: body) else {
                throw ProtobufReader.Malformed("not one uncompressed message")
            }
            check = try CheckRequest(decoding: message[...])
        } catch {
            context.metrics.checked(protocol: "grpc", .invalid, nanoseconds: (NIODeadline.now() - request.startedAt).nanoseconds)
            return .now(.grpc(message: nil, status: 3, statusMessage: "invalid CheckRequest: \(error)"))  // INVALID_ARGUMENT
        }
        let verdict = CheckDriver.judge(
            check, services: context.handle.services, maxHeaderBytes: context.maxHeaderBytes,
            deadline: Self.deadline(request.headers, startedAt: request.startedAt), via: "ext_authz_grpc", tokenMemory: tokenMemory,
            on: eventLoop)
        return answered(verdict, protocol: "grpc", startedAt: request.startedAt) {
            .grpc(message: CheckResponseEncoding.encode($0), status: 0, statusMessage: nil)
        }
    }

    /// grpc.health.v1: SERVING (1) exactly when `/readyz` answers 200, else NOT_SERVING (2); for the whole
    /// server ("") and for the Authorization service, NOT_FOUND for any other.
    private func answerHealth(_ request: Request) -> Answer {
        var service = ""
        do {
            guard let body = request.body, let message = GRPCMessageFraming.singleMessage(in: body) else {
                throw ProtobufReader.Malformed("not one message")
            }
            var reader = ProtobufReader(message[...])
            while let (number, type) = try reader.nextField() {
                if number == 1, type == .lengthDelimited { service = try reader.readString() } else { try reader.skip(type) }
            }
        } catch {
            return .grpc(message: nil, status: 3, statusMessage: "invalid HealthCheckRequest: \(error)")
        }
        guard service.isEmpty || service == "envoy.service.auth.v3.Authorization" else {
            return .grpc(message: nil, status: 5, statusMessage: "unknown service \(service)")  // NOT_FOUND
        }
        var writer = ProtobufWriter(capacity: 2)
        writer.writeVarintFieldIfSet(1, context.isReady() ? 1 : 2)
        return .grpc(message: writer.bytes, status: 0, statusMessage: nil)
    }

    // MARK: - The HTTP protocol

    /// Envoy's `http_service`: the original method, `<http_path_prefix><original path>`, Host, Content-Length,
    /// Authorization and the `allowed_headers`. 200 allows (with the identity headers); anything else denies.
    private func answerHTTPProtocol(_ request: Request, tokenMemory: ConnectionTokenMemory, on eventLoop: any EventLoop) -> EventualAnswer {
        let prefix = context.httpPathPrefix
        guard request.uri.hasPrefix(prefix), request.uri.dropFirst(prefix.count).first == "/" else {
            return .now(Self.httpAnswer(.deny(LocalResponse.json(.notFound, "{\"error\":\"not_found\"}"))))
        }
        var check = CheckRequest()
        check.method = request.method.rawValue
        check.path = String(request.uri.dropFirst(prefix.count))
        // Envoy's address: a trust decision (`trusted_proxies`) is never made on a header the client may have written
        // (X-Forwarded-For is Envoy's to append only with use_remote_address), so the failure log names Envoy here.
        check.sourceAddress = request.peerIP
        check.scheme = request.headers.first(name: "x-forwarded-proto") ?? "http"
        for (name, value) in request.headers {
            let lowered = HTTP2FieldName.lowercased(name)
            guard !HopByHopFields.contains(lowered.utf8), lowered != "content-length" else { continue }
            if lowered == "host" {
                check.host = value
                continue
            }
            check.headers.append(CheckRequest.Header(name: lowered, value: value))
        }
        let verdict = CheckDriver.judge(
            check, services: context.handle.services, maxHeaderBytes: context.maxHeaderBytes,
            deadline: Self.deadline(request.headers, startedAt: request.startedAt), via: "ext_authz_http", tokenMemory: tokenMemory,
            on: eventLoop)
        return answered(verdict, protocol: "http", startedAt: request.startedAt, Self.httpAnswer)
    }

    /// The verdict in the protocol's form (`form`), counted with its duration, now or when it comes.
    private func answered(
        _ verdict: CheckDriver.Judged, protocol protocolName: String, startedAt: NIODeadline,
        _ form: @escaping @Sendable (CheckVerdict) -> Answer
    ) -> EventualAnswer {
        let metrics = context.metrics
        let answer = { @Sendable (verdict: CheckVerdict) -> Answer in
            metrics.checked(protocol: protocolName, verdict.result, nanoseconds: (NIODeadline.now() - startedAt).nanoseconds)
            return form(verdict)
        }
        return verdict.map(answer)
    }

    private static func httpAnswer(_ verdict: CheckVerdict) -> Answer {
        switch verdict {
        case .allow(let allowance):
            var headers = HTTPHeaders()
            for (name, value) in allowance.headersToSet { headers.add(name: name, value: value) }
            // Envoy's HTTP protocol removes these from the request on a 200 (after it sets the ones above): what the
            // client sent of them among the headers Envoy showed, and every `_` spelling of an identity name, which it
            // does not show (an upstream reading `_` as `-` would take `x_auth_subject` for Gatehouse's).
            // (The spellings never hold a name Gatehouse sets: `IdentityHeaderNames` leaves those out once per configuration.)
            let removed = allowance.headersToRemove + allowance.spellingsToRemove.filter { !allowance.headersToRemove.contains($0) }
            if !removed.isEmpty { headers.add(name: "x-envoy-auth-headers-to-remove", value: removed.joined(separator: ",")) }
            return .http(status: .ok, headers: headers, body: "")
        case .deny(let response):
            return .http(status: response.status, headers: response.headers, body: response.body)
        }
    }

    /// Decided before the caller gives up (it would read a timeout as a failure): at 4/5 of its deadline, from
    /// gRPC's `grpc-timeout` or the `x-envoy-expected-rq-timeout-ms` Envoy sends with both protocols.
    /// A caller's timeout counts up to an hour (a larger one, or a negative one, is read as an hour or as none).
    static func deadline(_ headers: HTTPHeaders, startedAt: NIODeadline) -> NIODeadline? {
        func usable(_ timeout: TimeAmount?) -> TimeAmount? { timeout.flatMap { $0.nanoseconds >= 0 ? $0 : nil } }
        let grpc = usable(GRPCMessageFraming.timeout(headers.first(name: "grpc-timeout")))
        let envoy = usable(headers.first(name: "x-envoy-expected-rq-timeout-ms").flatMap { Int64($0) }.map { TimeAmount.milliseconds($0) })
        let timeout: TimeAmount
        switch (grpc, envoy) {
        case (let both?, let other?): timeout = min(both, other)
        case (let one?, nil), (nil, let one?): timeout = one
        case (nil, nil): return nil
        }
        let bounded = min(timeout, .hours(1))  // no overflow below: at most 3.6e12 ns x 4
        return startedAt + .nanoseconds(bounded.nanoseconds / 5 * 4)
    }
}

extension CheckVerdict {
    package var result: ExtAuthzMetrics.Result {
        if case .allow = self { return .allow }
        return .deny
    }
}
