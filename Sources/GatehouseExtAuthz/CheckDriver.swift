import Foundation
package import NIOCore
import NIOHTTP1
import GatehouseSyntax
package import GatehouseHTTP
package import GatehouseTelemetry
import GatehouseAuth
package import GatehouseExchange
package import GatehouseProxy
import GatehousePolicy
package import GatehouseVocabulary

/// One Check: the third way into the request core, beside the two doors. The `CheckRequest` is read into a
/// request head by the HTTP/2 door's own rules (`HTTP2RequestHeadReader`: pseudo-headers are not fields,
/// `:authority` and `host` must agree, values and `content-length` as on the doors), judged by the same core
/// (`ExchangeStateMachine`: route, token, verifier, revocation, introspection, DPoP, certificate binding,
/// requirements, failure log, metrics), and the core's action becomes a verdict: `forward` an allowance,
/// `send` a denial with the answer the doors would have sent. Lives on one event loop.
package final class CheckDriver: ExchangeDriving {
    package var core: ExchangeStateMachine
    package let services: ProxyServices
    package let coreEventLoop: any EventLoop
    /// The caller's connection's last verified token (`RecentToken`): a gateway repeating a user's token on its
    /// connection takes the doors' fast path.
    private let tokenMemory: ConnectionTokenMemory?
    /// Made only for a decision that has to wait (a key refetch, an introspection call): most are decided at once.
    private var promise: EventLoopPromise<CheckVerdict>?
    private var verdict: CheckVerdict?
    private var deadline: Scheduled<Void>?
    private var isDone = false
    /// The client's request is a gRPC call (its refusal reaches it as grpc-status and grpc-message).
    private var isGRPCRequest = false
    /// `[tracing]`: the Check's server span and what its decision waited on; nil when tracing is off.
    package private(set) var trace: RequestTrace?

    /// Fields Envoy joins with "," when the client sent them more than once: a token or a proof can hold no
    /// comma, so a comma means several, and several are refused as on the doors.
    private static let singleValuedFields = ["authorization", "dpop"]
    /// The pseudo-headers of a request Envoy describes, in the order a block carries them.
    private static let pseudoHeaderNames = [":method", ":scheme", ":authority", ":path"]

    private init(services: ProxyServices, tokenMemory: ConnectionTokenMemory?, eventLoop: any EventLoop, via: String) {
        self.services = services
        self.tokenMemory = tokenMemory
        self.coreEventLoop = eventLoop
        self.core = ExchangeStateMachine(speaksGRPC: false, forwardsAtReadEnd: false, via: via)
    }

    /// A verdict now, or once the decision it waits on has come.
    package typealias Judged = Eventual<CheckVerdict>

    /// Judges a Check. `deadline`: the caller's (gRPC `grpc-timeout`); a decision still pending then is a 503,
    /// never an allowance.
    package static func judge(
        _ check: CheckRequest, services: ProxyServices, maxHeaderBytes: Int, deadline: NIODeadline?, via: String,
        tokenMemory: ConnectionTokenMemory? = nil, on eventLoop: any EventLoop
    ) -> Judged {
        let driver = CheckDriver(services: services, tokenMemory: tokenMemory, eventLoop: eventLoop, via: via)
        driver.start(check, maxHeaderBytes: maxHeaderBytes, deadline: deadline)
        if let verdict = driver.verdict { return .now(verdict) }
        let promise = eventLoop.makePromise(of: CheckVerdict.self)
        driver.promise = promise
        return .later(promise.futureResult)
    }

    package var coreHasRequest: Bool { !isDone }

    private func start(_ check: CheckRequest, maxHeaderBytes: Int, deadline: NIODeadline?) {
        // Thrown, not a Result: a block bound out of a Result is a second reference, and the reader, which takes the
        // block's strings, would copy the whole block.
        let block: HTTP2FieldList
        do {
            block = try Self.headerBlock(of: check)
        } catch {
            performCoreAction(core.receivedMalformedHead(error.reason))
            return
        }
        let head: HTTPRequestHead
        switch HTTP2RequestHeadReader.read(fields: consume block, endStream: true, maxHeaderBytes: maxHeaderBytes) {
        case .success(let read):
            head = read.head
            isGRPCRequest = GRPCRefusal.isGRPC(head.headers)
        case .failure(let malformed):
            let status: HTTPResponseStatus = malformed.answer == .tooLarge ? .requestHeaderFieldsTooLarge : .badRequest
            performCoreAction(core.receivedMalformedHead(malformed.reason, status: status))
            return
        }
        if let deadline {
            self.deadline = coreEventLoop.assumeIsolated().scheduleTask(deadline: deadline) { self.deadlinePassed() }
        }
        let certificate = check.sourceCertificate.isEmpty
            ? nil : ForwardedClientCertificate.thumbprint(ofPEM: check.sourceCertificate.removingPercentEncoding ?? "")
        let now = NIODeadline.now()
        let started = services.tracer?.begin(head, start: now, clientIP: check.sourceAddress, clientVersion: nil, on: coreEventLoop)
        trace = started?.recorder
        trace?.cameVia(core.via ?? "ext_authz")
        performCoreAction(core.receivedHead(
            head, clientIP: check.sourceAddress, certificateThumbprint: certificate, routeContext: check.contextExtensions, settings: services.exchange, recent: tokenMemory?.recent,
            now: now, trace: started?.checkPropagation))
        if !isDone { performCoreAction(core.receivedEnd()) }
    }

    package func performCoreAction(_ action: ExchangeStateMachine.Action) {
        performRecords()
        guard !isDone else { return }
        switch action {
        case .send(var response):
            // The doors write the request id on every answer; so does a denial (Envoy's own id, when it sent one).
            if let requestID = core.inHand?.requestID { RequestIDField.set(requestID, on: &response.headers) }
            // Envoy answers a gRPC client's denial with the status mapped to grpc-status and the body as grpc-message:
            // the doors' gRPC message, `<reason>: <message>`.
            if isGRPCRequest, let message = response.grpcMessage {
                response.body = message
                response.headers.replaceOrAdd(name: "Content-Type", value: "text/plain; charset=utf-8")
            }
            finish(.deny(response))
        case .forward(let admission, _):
            guard let inHand = core.inHand else { return }
            let request = inHand.request
            if case .verified(let identity) = admission { tokenMemory?.remember(inHand, identity: identity, identityFields: nil) }
            finish(.allow(services.checkHead.checkAllowance(request, admission: admission, at: services.wallClock.seconds())))
        case .decide, .signOut, .logOut:
            performDecisionAction(action)
        case .readBody, .retry, .cut, .none, .ignored:
            break  // no body and no upstream leg: own endpoints are not reached through a Check
        }
    }

    /// The caller would give up before the decision (a JWKS refetch or an introspection call that outlasts it): the
    /// core's answer to that.
    private func deadlinePassed() {
        guard !isDone else { return }
        performCoreAction(core.callerDeadlinePassed())
    }

    private func finish(_ verdict: CheckVerdict) {
        guard !isDone else { return }
        isDone = true
        deadline?.cancel()
        // The server span's status is what the gateway is told to answer: 200 for an allowance.
        switch verdict {
        case .allow: trace?.finish(at: .now(), status: 200)
        case .deny(let response): trace?.finish(at: .now(), status: Int(response.status.code))
        }
        if let promise { promise.succeed(verdict) } else { self.verdict = verdict }
    }

    /// The request's header block as an HTTP/2 client would have sent it: the pseudo-headers (from the
    /// headers Envoy lists, else from `method`, `path`, `host`, `scheme`), then the regular fields, a joined
    /// token or proof split back into its values.
    package static func headerBlock(of check: CheckRequest) throws(HTTP2RequestHeadReader.Malformed) -> HTTP2FieldList {
        // `:method :scheme :authority :path`, in the order a block carries them.
        var pseudo: [String?] = [check.method, check.scheme.isEmpty ? "http" : check.scheme, check.host.isEmpty ? nil : check.host, check.path]
        // The pseudo-headers' slots first (those left out are dropped at the end), then the regular fields.
        var fields: [(String, String)] = []
        fields.reserveCapacity(check.headers.count + 4)
        for name in pseudoHeaderNames { fields.append((name, "")) }
        for header in check.headers {
            if header.name.utf8.first == ASCIIByte.colon {
                guard let slot = pseudoHeaderNames.firstIndex(of: header.name) else {
                    throw .badRequest("unknown pseudo-header \(header.name)")
                }
                // The request's method, path and host are said twice (attribute and header): they must agree, as a door
                // refuses a Host that disagrees with `:authority` (docs/security.md E19): one reading, whichever is read.
                // A host is compared without regard to ASCII case.
                if slot != 1, let described = pseudo[slot], !described.isEmpty,
                   slot == 2 ? !described.utf8.elementsEqualIgnoringASCIICase(header.value.utf8) : described != header.value {
                    throw .badRequest("\(header.name) differs from the request's \(slot == 2 ? "host" : String(header.name.dropFirst()))")
                }
                pseudo[slot] = header.value
            } else if singleValuedFields.contains(where: { $0 == header.name }), StringBytes.contains(ASCIIByte.comma, in: header.value) {
                for part in header.value.split(separator: ",", omittingEmptySubsequences: false) {
                    fields.append((header.name, part.trimmingCharacters(in: CharacterSet(charactersIn: " \t"))))
                }
            } else {
                fields.append((header.name, header.value))
            }
        }
        if check.hasValueNotUTF8 { throw .badRequest("a field value that is not UTF-8") }
        for slot in pseudo.indices.reversed() {
            if let value = pseudo[slot] { fields[slot].1 = value } else { fields.remove(at: slot) }
        }
        return fields
    }
}
