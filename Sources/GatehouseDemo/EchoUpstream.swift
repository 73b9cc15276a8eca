public import NIOCore
import NIOHTTP1
import NIOPosix
import GatehouseSyntax
import GatehouseHTTP
import GatehouseProxy
import GatehouseExtAuthz

/// The demo's upstream: answers every request with JSON describing what it received
/// (method, URI, headers), so a newcomer sees exactly what Gatehouse forwards.
public final class EchoUpstream: Sendable {
    private let channel: any Channel

    public init(port: Int = 0, group: any EventLoopGroup) async throws {
        channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(EchoHandler())
                }
            }
            .bind(host: "127.0.0.1", port: port).get()
    }

    public var port: Int { channel.localAddress?.port ?? 0 }

    public func close() async {
        try? await channel.close()
    }
}

final class EchoHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart
    private var head: HTTPRequestHead?
    private var bodyBytes = 0

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            bodyBytes = 0
        case .body(let buffer):
            bodyBytes += buffer.readableBytes
        case .end:
            guard let head else { return }
            let headers = head.headers.map { JSONValue.array([.string($0.name), .string($0.value)]) }
            let echo = JSONValue.object([
                "method": .string(head.method.rawValue), "uri": .string(head.uri),
                "headers": .array(headers), "body_bytes": .number(String(bodyBytes)),
            ]).compactJSON + "\n"
            WholeResponse(status: .ok, headers: ["Content-Type": "application/json"], body: Array(echo.utf8))
                .write(to: context, answering: head)
            self.head = nil
        }
    }
}
