import NIOCore
import NIOHTTP1

/// What every Check on the `[ext_authz]` port is answered with: the services of the moment (a reload applies to
/// the next Check), the doors' header limit, where Envoy's HTTP protocol puts the original path, readiness for
/// the health check, and the Check metrics.
struct ExtAuthzContext: Sendable {
    let handle: ServicesHandle
    let maxHeaderBytes: Int
    /// `[ext_authz] http_path_prefix`, without a trailing slash ("" for "/").
    let httpPathPrefix: String
    /// What `/readyz` would say (200: true).
    let isReady: @Sendable () -> Bool
    let metrics: ExtAuthzMetrics

    /// A CheckRequest larger than this is refused unread (INVALID_ARGUMENT).
    static let maxCheckRequestBytes = 1 << 20
}

/// One request on the `[ext_authz]` port, HTTP/1.1 or an HTTP/2 stream (through NIO's HTTP/2-to-HTTP/1 codec):
/// gRPC `envoy.service.auth.v3.Authorization/Check` and `grpc.health.v1.Health/Check`, or the HTTP protocol
/// (Envoy's `http_service`) for any other request. The decision is the core's (`CheckExchange`).
final class ExtAuthzHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    static let checkMethod = "/envoy.service.auth.v3.Authorization/Check"
    static let healthMethod = "/grpc.health.v1.Health/Check"

    private let context: ExtAuthzContext
    private var head: HTTPRequestHead?
    private var body: ByteBuffer?
    private var bodyTooLarge = false
    private var startedAt = NIODeadline.now()

    init(context: ExtAuthzContext) {
        self.context = context
    }

    func channelRead(context channelContext: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = nil
            bodyTooLarge = false
            startedAt = .now()
        case .body(var part):
            guard !bodyTooLarge else { return }
            if (body?.readableBytes ?? 0) + part.readableBytes > ExtAuthzContext.maxCheckRequestBytes {
                bodyTooLarge = true
                body = nil
            } else if body == nil {
                body = part
            } else {
                body!.writeBuffer(&part)
            }
        case .end:
            guard let head else { return }
            self.head = nil
            respond(to: head, body: body ?? channelContext.channel.allocator.buffer(capacity: 0), context: channelContext)
        }
    }

    private func respond(to head: HTTPRequestHead, body: ByteBuffer, context channelContext: ChannelHandlerContext) {
        let isGRPC = head.headers.first(name: "content-type")?.lowercased().hasPrefix("application/grpc") == true
        guard isGRPC, head.method == .POST else {
            answerHTTPProtocol(head, context: channelContext)
            return
        }
        switch head.uri {
        case Self.checkMethod:
            answerCheck(head, body: body, context: channelContext)
        case Self.healthMethod:
            answerHealth(body: body, context: channelContext)
        default:
            writeGRPC(nil, status: 12, message: "unknown method \(head.uri)", context: channelContext)  // UNIMPLEMENTED
        }
    }

    // MARK: - gRPC

    private func answerCheck(_ head: HTTPRequestHead, body: ByteBuffer, context channelContext: ChannelHandlerContext) {
        let check: CheckRequest
        do {
            guard !bodyTooLarge else { throw ProtobufReader.Malformed("CheckRequest over \(ExtAuthzContext.maxCheckRequestBytes) bytes") }
            guard let message = GRPCMessageFraming.singleMessage(in: body) else { throw ProtobufReader.Malformed("not one uncompressed message") }
            check = try CheckRequest(decoding: message[...])
        } catch {
            self.context.metrics.checked(protocol: "grpc", .invalid, nanoseconds: (NIODeadline.now() - startedAt).nanoseconds)
            writeGRPC(nil, status: 3, message: "invalid CheckRequest: \(error)", context: channelContext)  // INVALID_ARGUMENT
            return
        }
        let deadline = Self.deadline(head.headers, startedAt: startedAt)
        let verdict = CheckExchange.judge(
            check, services: self.context.handle.services, maxHeaderBytes: self.context.maxHeaderBytes, deadline: deadline,
            via: "ext_authz_grpc", on: channelContext.eventLoop)
        let loopBound = NIOLoopBound((self, channelContext), eventLoop: channelContext.eventLoop)
        verdict.whenSuccess { verdict in
            let (handler, channelContext) = loopBound.value
            handler.context.metrics.checked(protocol: "grpc", verdict.result, nanoseconds: (NIODeadline.now() - handler.startedAt).nanoseconds)
            handler.writeGRPC(CheckResponseEncoding.encode(verdict), status: 0, message: nil, context: channelContext)
        }
    }

    /// grpc.health.v1: SERVING (1) exactly when `/readyz` answers 200, else NOT_SERVING (2); for the whole
    /// server ("") and for the Authorization service, NOT_FOUND for any other.
    private func answerHealth(body: ByteBuffer, context channelContext: ChannelHandlerContext) {
        var service = ""
        do {
            guard let message = GRPCMessageFraming.singleMessage(in: body) else { throw ProtobufReader.Malformed("not one message") }
            var reader = ProtobufReader(message[...])
            while let (number, type) = try reader.nextField() {
                if number == 1, type == .lengthDelimited { service = try reader.readString() } else { try reader.skip(type) }
            }
        } catch {
            writeGRPC(nil, status: 3, message: "invalid HealthCheckRequest: \(error)", context: channelContext)
            return
        }
        guard service.isEmpty || service == "envoy.service.auth.v3.Authorization" else {
            writeGRPC(nil, status: 5, message: "unknown service \(service)", context: channelContext)  // NOT_FOUND
            return
        }
        var writer = ProtobufWriter(reservingCapacity: 2)
        writer.writeVarintField(1, context.isReady() ? 1 : 2)
        writeGRPC(writer.bytes, status: 0, message: nil, context: channelContext)
    }

    private func writeGRPC(_ message: [UInt8]?, status: Int, message statusMessage: String?, context channelContext: ChannelHandlerContext) {
        var headers = HTTPHeaders()
        headers.add(name: "content-type", value: "application/grpc")
        channelContext.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http2, status: .ok, headers: headers))), promise: nil)
        if let message {
            channelContext.write(wrapOutboundOut(.body(.byteBuffer(GRPCMessageFraming.frame(message, allocator: channelContext.channel.allocator)))),
                                 promise: nil)
        }
        var trailers = HTTPHeaders()
        trailers.add(name: "grpc-status", value: String(status))
        if let statusMessage { trailers.add(name: "grpc-message", value: GRPCRefusal.percentEncoded(statusMessage)) }
        channelContext.writeAndFlush(wrapOutboundOut(.end(trailers)), promise: nil)
    }

    // MARK: - The HTTP protocol

    /// Envoy's `http_service`: the original method, `<http_path_prefix><original path>`, Host, Content-Length,
    /// Authorization and the `allowed_headers`. 200 allows (with the identity headers); anything else denies.
    private func answerHTTPProtocol(_ head: HTTPRequestHead, context channelContext: ChannelHandlerContext) {
        let prefix = context.httpPathPrefix
        guard head.uri.hasPrefix(prefix), head.uri.dropFirst(prefix.count).first == "/" else {
            writeHTTP(.deny(LocalResponse.json(.notFound, "{\"error\":\"not_found\"}")), version: head.version, context: channelContext)
            return
        }
        var check = CheckRequest()
        check.method = head.method.rawValue
        check.path = String(head.uri.dropFirst(prefix.count))
        // The original client, when Envoy passes it on (`allowed_headers` x-forwarded-for); else Envoy itself.
        let peer = channelContext.channel.remoteAddress?.ipAddress ?? ""
        let forwardedFor = head.headers[canonicalForm: "x-forwarded-for"].last.map(String.init)
        check.sourceAddress = forwardedFor ?? peer
        check.scheme = head.headers.first(name: "x-forwarded-proto") ?? "http"
        for (name, value) in head.headers {
            let lowered = name.lowercased()
            guard !HeaderHygiene.isHopByHop(lowered, nominated: []), lowered != "content-length" else { continue }
            if lowered == "host" {
                check.host = value
                continue
            }
            check.headers.append(CheckRequest.Header(name: lowered, value: value))
        }
        let verdict = CheckExchange.judge(
            check, services: context.handle.services, maxHeaderBytes: context.maxHeaderBytes,
            deadline: Self.deadline(head.headers, startedAt: startedAt), via: "ext_authz_http",
            on: channelContext.eventLoop)
        let loopBound = NIOLoopBound((self, channelContext), eventLoop: channelContext.eventLoop)
        verdict.whenSuccess { verdict in
            let (handler, channelContext) = loopBound.value
            handler.context.metrics.checked(protocol: "http", verdict.result, nanoseconds: (NIODeadline.now() - handler.startedAt).nanoseconds)
            handler.writeHTTP(verdict, version: head.version, context: channelContext)
        }
    }

    private func writeHTTP(_ verdict: CheckVerdict, version: HTTPVersion, context channelContext: ChannelHandlerContext) {
        var headers = HTTPHeaders()
        let status: HTTPResponseStatus
        var body = ""
        switch verdict {
        case .allow(let allowance):
            status = .ok
            for (name, value) in allowance.headersToSet { headers.add(name: name, value: value) }
            // Envoy's HTTP protocol removes these from the request on a 200 (after it sets the ones above).
            if !allowance.headersToRemove.isEmpty {
                headers.add(name: "x-envoy-auth-headers-to-remove", value: allowance.headersToRemove.joined(separator: ","))
            }
        case .deny(let response):
            status = response.status
            headers = response.headers
            body = response.body
        }
        headers.replaceOrAdd(name: "content-length", value: String(body.utf8.count))
        channelContext.write(wrapOutboundOut(.head(HTTPResponseHead(version: version, status: status, headers: headers))), promise: nil)
        if !body.isEmpty {
            var buffer = channelContext.channel.allocator.buffer(capacity: body.utf8.count)
            buffer.writeString(body)
            channelContext.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        }
        channelContext.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}

extension ExtAuthzHandler {
    /// Decided before the caller gives up (it would read a timeout as a failure): at 4/5 of its deadline, from
    /// gRPC's `grpc-timeout` or the `x-envoy-expected-rq-timeout-ms` Envoy sends with both protocols.
    static func deadline(_ headers: HTTPHeaders, startedAt: NIODeadline) -> NIODeadline? {
        let grpc = GRPCMessageFraming.timeout(headers.first(name: "grpc-timeout"))
        let envoy = headers.first(name: "x-envoy-expected-rq-timeout-ms").flatMap { Int64($0) }.map { TimeAmount.milliseconds($0) }
        guard let timeout = [grpc, envoy].compactMap({ $0 }).min() else { return nil }
        return startedAt + .nanoseconds(timeout.nanoseconds * 4 / 5)
    }
}

extension CheckVerdict {
    var result: ExtAuthzMetrics.Result {
        if case .allow = self { return .allow }
        return .deny
    }
}
