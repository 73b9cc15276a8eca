import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

/// A scriptable JWKS (and OIDC discovery) server on loopback that counts its fetches.
final class TestJWKSServer: Sendable {
    struct Script: Sendable {
        var body: String
        var status: HTTPResponseStatus = .ok
        var cacheControl: String?
        var delay: TimeAmount = .zero
        /// Served at `/.well-known/openid-configuration` when set.
        var discovery: String?
        /// Served at `/oauth2/userInfo` (Cognito's userinfo) with this status.
        var userinfo = "{}"
        var userinfoStatus: HTTPResponseStatus = .ok
    }

    private let script: NIOLockedValueBox<Script>
    private let fetches = NIOLockedValueBox(0)
    private let userinfoCalls = NIOLockedValueBox(0)
    private let channel: any Channel

    init(jwks: String) async throws {
        let script = NIOLockedValueBox(Script(body: jwks))
        let fetches = self.fetches
        let userinfoCalls = self.userinfoCalls
        self.script = script
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(Handler(script: script, fetches: fetches, userinfoCalls: userinfoCalls))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
    }

    var port: Int { channel.localAddress?.port ?? 0 }
    var jwksURL: URL { URL(string: "http://127.0.0.1:\(port)/jwks.json")! }
    var fetchCount: Int { fetches.withLockedValue { $0 } }
    var userinfoCount: Int { userinfoCalls.withLockedValue { $0 } }
    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

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
        let fetches: NIOLockedValueBox<Int>
        let userinfoCalls: NIOLockedValueBox<Int>
        var uri = ""

        init(script: NIOLockedValueBox<Script>, fetches: NIOLockedValueBox<Int>, userinfoCalls: NIOLockedValueBox<Int>) {
            self.script = script
            self.fetches = fetches
            self.userinfoCalls = userinfoCalls
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head): uri = head.uri
            case .body: break
            case .end:
                let current = script.withLockedValue { $0 }
                let isDiscovery = uri.hasSuffix("/.well-known/openid-configuration")
                let isUserinfo = uri.hasSuffix("/oauth2/userInfo")
                if isUserinfo { userinfoCalls.withLockedValue { $0 += 1 } } else if !isDiscovery { fetches.withLockedValue { $0 += 1 } }
                let body = isUserinfo ? current.userinfo : isDiscovery ? (current.discovery ?? "{}") : current.body
                let status = isUserinfo ? current.userinfoStatus : isDiscovery ? (current.discovery == nil ? .notFound : .ok) : current.status
                var headers: HTTPHeaders = ["Content-Type": "application/json", "Content-Length": String(body.utf8.count)]
                if let cacheControl = current.cacheControl { headers.add(name: "Cache-Control", value: cacheControl) }
                let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
                context.eventLoop.assumeIsolated().scheduleTask(in: current.delay) {
                    let context = loopBound.value
                    var buffer = context.channel.allocator.buffer(capacity: body.utf8.count)
                    buffer.writeString(body)
                    context.write(self.wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
                    context.write(self.wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
                    context.writeAndFlush(self.wrapOutboundOut(.end(nil)), promise: nil)
                }
            }
        }
    }
}
