public import NIOCore
import NIOHTTP1
import NIOPosix

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
            var buffer = context.channel.allocator.buffer(capacity: echo.utf8.count)
            buffer.writeString(echo)
            let response = HTTPResponseHead(version: head.version, status: .ok, headers: [
                "Content-Type": "application/json", "Content-Length": String(buffer.readableBytes),
            ]).keepingAlive(head.isKeepAlive)
            context.write(wrapOutboundOut(.head(response)), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
            let keepAlive = head.isKeepAlive
            context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
                if !keepAlive { context.close(promise: nil) }
            }
            self.head = nil
        }
    }
}
