import NIOCore
import NIOHTTP1

/// Where a `StreamDriver` writes its answer and asks for more of its request: one stream of a
/// frame-level HTTP/2 connection (`HTTP2ServerStream`), or an HTTP/1.1 client connection behind NIO's
/// codec in front of an HTTP/2 upstream (`HTTP1PartsHandler`). Calls come on the connection's event loop.
protocol StreamTransport: AnyObject {
    var eventLoop: any EventLoop { get }
    var allocator: ByteBufferAllocator { get }
    /// Whether the client takes more response bytes now (false: stop reading the upstream).
    var isWritable: Bool { get }
    /// An HTTP/1.x client's version, which its answers take; nil for an HTTP/2 stream.
    var clientVersion: HTTPVersion? { get }
    /// `endStream`: the head is the whole answer (gRPC's trailers-only form, an empty local answer).
    func writeHead(_ head: HTTPResponseHead, endStream: Bool)
    func writeBody(_ buffer: ByteBuffer)
    /// Ends the response; `promise` completes once the end is on its way.
    func writeEnd(trailers: HTTPHeaders?, promise: EventLoopPromise<Void>?)
    func flush()
    /// Asks for more of the request (reads are manual: backpressure towards the client).
    func readRequest()
    /// Calls the exchange's `deadlinePassed(now:)` at `deadline` (or soon after).
    func wake(at deadline: NIODeadline)
    /// The exchange is over. `completed`: the request and the answer went through whole (an HTTP/1.1
    /// connection may take the next request); otherwise the stream is reset or the connection closed.
    func finish(completed: Bool)
}
