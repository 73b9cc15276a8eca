import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import GatehouseProxy
import GatehouseExtAuthz

/// A scriptable JWKS (and OIDC discovery) server on loopback that counts its fetches.
final class TestJWKSServer: Sendable {
    struct Script: Sendable {
        var body: String
        var status: HTTPResponseStatus = .ok
        var cacheControl: String?
        /// An `Age` header on the key set (a cache on the way held it this long).
        var age: String?
        var delay: TimeAmount = .zero
        /// Served at `/.well-known/openid-configuration` when set.
        var discovery: String?
        /// Served at `/oauth2/userInfo` (Cognito's userinfo) with this status.
        var userinfo = "{}"
        var userinfoStatus: HTTPResponseStatus = .ok
        /// Served at `/oauth2/revoke` (RFC 7009 token revocation) with this status.
        var revokeStatus: HTTPResponseStatus = .ok
        var revokeBody = ""
        /// When set, the JWKS path answers `302 Found` with this `Location` instead of the key set.
        var redirect: String?
        /// When set, the discovery path answers `302 Found` with this `Location` instead of the document.
        var discoveryRedirect: String?
    }

    private let script: NIOLockedValueBox<Script>
    /// When each JWKS fetch arrived.
    private let fetches = NIOLockedValueBox<[ContinuousClock.Instant]>([])
    private let discoveryFetches = NIOLockedValueBox(0)
    private let allRequests = NIOLockedValueBox(0)
    private let userinfoCalls = NIOLockedValueBox(0)
    private let revokeForms = NIOLockedValueBox<[String]>([])
    private let channel: any Channel

    init(jwks: String) async throws {
        let script = NIOLockedValueBox(Script(body: jwks))
        let fetches = self.fetches
        let discoveryFetches = self.discoveryFetches
        let allRequests = self.allRequests
        let userinfoCalls = self.userinfoCalls
        let revokeForms = self.revokeForms
        self.script = script
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(Handler(
                        script: script, fetches: fetches, discoveryFetches: discoveryFetches, allRequests: allRequests,
                        userinfoCalls: userinfoCalls, revokeForms: revokeForms))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
    }

    var port: Int { channel.localAddress?.port ?? 0 }
    var jwksURL: URL { URL(string: "http://127.0.0.1:\(port)/jwks.json")! }
    var fetchCount: Int { fetches.withLockedValue { $0.count } }
    var fetchTimes: [ContinuousClock.Instant] { fetches.withLockedValue { $0 } }
    var userinfoCount: Int { userinfoCalls.withLockedValue { $0 } }
    /// Requests for the discovery document (`/.well-known/openid-configuration`).
    var discoveryCount: Int { discoveryFetches.withLockedValue { $0 } }
    /// Every request received, whatever its path.
    var requestCount: Int { allRequests.withLockedValue { $0 } }
    var discoveryURL: URL { URL(string: "http://127.0.0.1:\(port)/.well-known/openid-configuration")! }
    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }
    /// The form bodies `/oauth2/revoke` received, in order.
    var revokeRequests: [String] { revokeForms.withLockedValue { $0 } }

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
        let fetches: NIOLockedValueBox<[ContinuousClock.Instant]>
        let discoveryFetches: NIOLockedValueBox<Int>
        let allRequests: NIOLockedValueBox<Int>
        let userinfoCalls: NIOLockedValueBox<Int>
        let revokeForms: NIOLockedValueBox<[String]>
        var uri = ""
        var requestBody = ""

        init(
            script: NIOLockedValueBox<Script>, fetches: NIOLockedValueBox<[ContinuousClock.Instant]>, discoveryFetches: NIOLockedValueBox<Int>,
            allRequests: NIOLockedValueBox<Int>, userinfoCalls: NIOLockedValueBox<Int>, revokeForms: NIOLockedValueBox<[String]>
        ) {
            self.script = script
            self.fetches = fetches
            self.discoveryFetches = discoveryFetches
            self.allRequests = allRequests
            self.userinfoCalls = userinfoCalls
            self.revokeForms = revokeForms
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                uri = head.uri
                requestBody = ""
            case .body(let buffer): requestBody += String(buffer: buffer)
            case .end:
                let current = script.withLockedValue { $0 }
                allRequests.withLockedValue { $0 += 1 }
                if uri.hasSuffix("/oauth2/revoke") {
                    revokeForms.withLockedValue { $0.append(requestBody) }
                    respond(status: current.revokeStatus, body: current.revokeBody, headers: [:], delay: current.delay, context: context)
                    return
                }
                let isDiscovery = uri.hasSuffix("/.well-known/openid-configuration")
                let isUserinfo = uri.hasSuffix("/oauth2/userInfo")
                if isUserinfo { userinfoCalls.withLockedValue { $0 += 1 } } else if !isDiscovery { fetches.withLockedValue { $0.append(.now) } }
                if isDiscovery { discoveryFetches.withLockedValue { $0 += 1 } }
                if let location = isUserinfo ? nil : isDiscovery ? current.discoveryRedirect : current.redirect {
                    respond(status: .found, body: "", headers: ["Location": location], delay: current.delay, context: context)
                    return
                }
                let body = isUserinfo ? current.userinfo : isDiscovery ? (current.discovery ?? "{}") : current.body
                let status = isUserinfo ? current.userinfoStatus : isDiscovery ? (current.discovery == nil ? .notFound : .ok) : current.status
                var headers: HTTPHeaders = ["Content-Type": "application/json", "Content-Length": String(body.utf8.count)]
                if let cacheControl = current.cacheControl { headers.add(name: "Cache-Control", value: cacheControl) }
                if let age = current.age, !isDiscovery, !isUserinfo { headers.add(name: "Age", value: age) }
                respond(status: status, body: body, headers: headers, delay: current.delay, context: context)
            }
        }

        private func respond(status: HTTPResponseStatus, body: String, headers: HTTPHeaders, delay: TimeAmount, context: ChannelHandlerContext) {
            var headers = headers
            headers.replaceOrAdd(name: "Content-Type", value: "application/json")
            headers.replaceOrAdd(name: "Content-Length", value: String(body.utf8.count))
            let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
            context.eventLoop.assumeIsolated().scheduleTask(in: delay) {
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
