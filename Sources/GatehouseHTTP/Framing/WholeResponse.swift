public import NIOCore
public import NIOHTTP1

/// A complete small response (admin endpoints, the demo's servers): head, body, end, and a close
/// afterwards when the request did not ask to keep the connection.
public struct WholeResponse {
    public var status: HTTPResponseStatus
    public var headers: HTTPHeaders
    public var body: [UInt8]

    public init(status: HTTPResponseStatus, headers: HTTPHeaders, body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public func write(to context: ChannelHandlerContext, answering request: HTTPRequestHead) {
        var buffer = context.channel.allocator.buffer(capacity: body.count)
        buffer.writeBytes(body)
        var headers = self.headers
        // A 304 says no length: only the 200's would be allowed (RFC 9110 §8.6).
        if status != .notModified { headers.replaceOrAdd(name: "Content-Length", value: String(body.count)) }
        let head = HTTPResponseHead(version: request.version, status: status, headers: headers).keepingAlive(request.isKeepAlive)
        context.write(NIOAny(HTTPServerResponsePart.head(head)), promise: nil)
        context.write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(buffer))), promise: nil)
        let keepAlive = request.isKeepAlive
        context.writeAndFlush(NIOAny(HTTPServerResponsePart.end(nil))).assumeIsolated().whenComplete { _ in
            if !keepAlive { context.close(promise: nil) }
        }
    }
}
