import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import GatehouseProxy
import GatehouseExtAuthz

/// A Kubernetes API server's OIDC key endpoint on loopback over TLS: `GET /openid/v1/jwks` answers the key
/// set only to `Authorization: Bearer <expected token>` (401 otherwise), and records what it was asked with.
final class TestKubernetesAPIServer: Sendable {
    struct Script: Sendable {
        var jwks: String
        var expectedToken: String
        /// Service-account tokens whose pod is gone: a TokenReview of one says nothing of `authenticated`.
        var deleted: Set<String> = []
    }

    private let script: NIOLockedValueBox<Script>
    private let seen = NIOLockedValueBox<[String]>([])
    private let channel: any Channel

    init(certificate: String, key: String, script: Script) async throws {
        let script = NIOLockedValueBox(script)
        let seen = self.seen
        self.script = script
        let tls = try NIOSSLContext(configuration: .makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(certificate).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: key, format: .pem))))
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls))
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(Handler(script: script, seen: seen))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
    }

    var url: URL { URL(string: "https://127.0.0.1:\(channel.localAddress?.port ?? 0)")! }
    /// The `Authorization` of every key request, in order.
    var authorizations: [String] { seen.withLockedValue { $0.filter { !$0.hasPrefix("review ") } } }
    /// TokenReviews asked for.
    var reviews: Int { seen.withLockedValue { $0.filter { $0.hasPrefix("review ") }.count } }

    func update(_ change: (inout Script) -> Void) {
        script.withLockedValue(change)
    }

    func close() async {
        try? await channel.close()
    }

    private final class Handler: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        let script: NIOLockedValueBox<Script>
        let seen: NIOLockedValueBox<[String]>
        var head: HTTPRequestHead?
        var body = ""

        init(script: NIOLockedValueBox<Script>, seen: NIOLockedValueBox<[String]>) {
            self.script = script
            self.seen = seen
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let received):
                head = received
                body = ""
            case .body(let buffer): body += String(buffer: buffer)
            case .end:
                let current = script.withLockedValue { $0 }
                let authorization = head?.headers.first(name: "authorization") ?? ""
                let isKeys = head?.uri == "/openid/v1/jwks"
                let isReview = head?.method == .POST && head?.uri == "/apis/authentication.k8s.io/v1/tokenreviews"
                if isKeys { seen.withLockedValue { $0.append(authorization) } }
                if isReview { seen.withLockedValue { $0.append("review " + authorization) } }
                let allowed = (isKeys || isReview) && authorization == "Bearer " + current.expectedToken
                var answer = allowed ? current.jwks : #"{"kind":"Status","code":401}"#
                var status: HTTPResponseStatus = allowed ? .ok : .unauthorized
                if allowed, isReview {
                    let token = (try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
                        .flatMap { ($0["spec"] as? [String: Any])?["token"] as? String } ?? ""
                    status = .created
                    answer = current.deleted.contains(token)
                        ? #"{"kind":"TokenReview","status":{"error":"pod \"api-7d9f\" not found"}}"#
                        : #"{"kind":"TokenReview","status":{"authenticated":true,"user":{"username":"system:serviceaccount:payments:api"}}}"#
                }
                let body = answer
                let headers: HTTPHeaders = ["Content-Type": "application/json", "Content-Length": String(body.utf8.count)]
                context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))),
                              promise: nil)
                context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: body)))), promise: nil)
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            }
        }
    }
}
