import Foundation
@testable import Gatehouse
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import GatehouseSyntax
import GatehouseProxy
import GatehouseExtAuthz

/// A scripted RFC 7662 endpoint on loopback for the faults a real IdP rarely shows on demand: each
/// `POST /introspect` is answered by `answer(token)` (status, body, delay). It counts calls, the most
/// it had in flight at once, and the forms it received.
final class TestIntrospectionIdP: Sendable {
    struct Reply: Sendable {
        var status: HTTPResponseStatus = .ok
        var body: String
        var delay: TimeAmount = .zero
        var location: String?
    }

    private let answer: NIOLockedValueBox<@Sendable (String) -> Reply>
    private let counters = NIOLockedValueBox(Counters())
    private let channel: any Channel

    struct Counters: Sendable {
        var calls = 0
        var inFlight = 0
        var maxInFlight = 0
        var forms: [String] = []
        var authorizations: [String] = []
    }

    init(answer: @escaping @Sendable (String) -> Reply) async throws {
        let answer = NIOLockedValueBox<@Sendable (String) -> Reply>(answer)
        let counters = self.counters
        self.answer = answer
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(Handler(answer: answer, counters: counters))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
    }

    var port: Int { channel.localAddress?.port ?? 0 }
    var endpoint: URL { URL(string: "http://127.0.0.1:\(port)/introspect")! }
    var snapshot: Counters { counters.withLockedValue { $0 } }

    func update(_ answer: @escaping @Sendable (String) -> Reply) {
        self.answer.withLockedValue { $0 = answer }
    }

    func close() async {
        try? await channel.close()
    }

    /// An active token's answer with these members added.
    static func active(_ extra: [String: JSONValue] = [:], lifetime: Int64 = 600) -> String {
        let now = Int64(Date().timeIntervalSince1970)
        var members: [String: JSONValue] = [
            "active": .bool(true), "sub": .string("opaque-user"), "scope": .string("read"), "client_id": .string("app"),
            "exp": .number(String(now + lifetime)), "iat": .number(String(now - 5)),
        ]
        members.merge(extra) { _, new in new }
        return JSONValue.object(members).compactJSON
    }

    private final class Handler: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        let answer: NIOLockedValueBox<@Sendable (String) -> Reply>
        let counters: NIOLockedValueBox<Counters>
        var body = ""
        var authorization = ""

        init(answer: NIOLockedValueBox<@Sendable (String) -> Reply>, counters: NIOLockedValueBox<Counters>) {
            self.answer = answer
            self.counters = counters
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                body = ""
                authorization = head.headers.first(name: "authorization") ?? ""
            case .body(let buffer):
                body += String(buffer: buffer)
            case .end:
                let form = body
                let token = form.split(separator: "&").first { $0.hasPrefix("token=") }.map { String($0.dropFirst(6)).removingPercentEncoding ?? "" } ?? ""
                let reply = answer.withLockedValue { $0 }(token)
                counters.withLockedValue { counters in
                    counters.calls += 1
                    counters.inFlight += 1
                    counters.maxInFlight = max(counters.maxInFlight, counters.inFlight)
                    counters.forms.append(form)
                    counters.authorizations.append(authorization)
                }
                let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
                let counters = self.counters
                context.eventLoop.assumeIsolated().scheduleTask(in: reply.delay) {
                    counters.withLockedValue { $0.inFlight -= 1 }
                    let context = loopBound.value
                    var headers: HTTPHeaders = ["Content-Type": "application/json", "Content-Length": String(reply.body.utf8.count)]
                    if let location = reply.location { headers.add(name: "Location", value: location) }
                    context.write(NIOAny(HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: reply.status, headers: headers))),
                                  promise: nil)
                    context.write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(string: reply.body)))), promise: nil)
                    context.writeAndFlush(NIOAny(HTTPServerResponsePart.end(nil)), promise: nil)
                }
            }
        }
    }
}

/// Authlib's RFC 7662 endpoint (`Resources/introspection/authlib_server.py`) on a free loopback port.
final class TestAuthlibServer: Sendable {
    let port: Int
    private let pid: pid_t
    static let clientID = "gatehouse-rs"
    static let clientSecret = "s3cr3t with spaces & symbols"

    init(tokens: [[String: JSONValue]], authMethod: String) async throws {
        (pid, port) = try await PythonPeer.startServer("introspection", "authlib_server.py", [
            "--tokens", JSONValue.array(tokens.map(JSONValue.object)).compactJSON, "--client-id", Self.clientID,
            "--client-secret", Self.clientSecret, "--auth-method", authMethod,
        ], what: "Authlib's introspection server (are authlib and flask installed? scripts/test.sh installs them)")
    }

    var base: String { "http://127.0.0.1:\(port)" }

    func close() {
        ChildProcess.stop(pid)
    }

    static func with<T: Sendable>(
        tokens: [[String: JSONValue]], authMethod: String = "client_secret_basic", _ body: (TestAuthlibServer) async throws -> T
    ) async throws -> T {
        let server = try await TestAuthlibServer(tokens: tokens, authMethod: authMethod)
        defer { server.close() }
        return try await body(server)
    }
}
