import NIOCore
import NIOHTTP1
import GatehouseHTTP

/// Where a `StreamDriver` writes its answer and asks for more of its request: one stream of a
/// frame-level HTTP/2 connection (`HTTP2ServerStream`), or one request of an HTTP/1.1 client connection
/// (`ClientConnectionHandler`). Each frames the answer its own way. Calls come on the connection's event loop.
protocol StreamTransport: AnyObject {
    var eventLoop: any EventLoop { get }
    var allocator: ByteBufferAllocator { get }
    /// Whether the client takes more response bytes now (false: stop reading the upstream).
    var isWritable: Bool { get }
    /// An HTTP/1.x client's version, which its answers take; nil for an HTTP/2 stream.
    var clientVersion: HTTPVersion? { get }
    /// `endStream`: the head is the whole answer (gRPC's trailers-only form, an empty local answer).
    /// `closesConnection`: an HTTP/1.1 connection closes after this answer (says so in the head).
    func writeHead(_ head: ClientResponseHead, endStream: Bool, closesConnection: Bool)
    /// An interim (1xx) head, ahead of the answer's.
    func writeInformational(_ head: ClientResponseHead)
    func writeBody(_ buffer: ByteBuffer)
    func writeEnd(trailers: HTTPHeaders?)
    func flush()
    /// Asks for more of the request (reads are manual: backpressure towards the client).
    func readRequest()
    /// Calls the driver's `deadlinePassed(now:)` at `deadline` (or soon after).
    func wake(at deadline: NIODeadline)
    /// The exchange is over, once what it wrote is on its way. `completed`: the request and the answer went
    /// through whole (an HTTP/1.1 connection may take the next request); otherwise the stream is reset or the
    /// connection closed.
    func finish(completed: Bool)
    /// The upstream switched protocols (its 101 relayed as `head`): bytes go both ways between the client and
    /// `upstream` from here. False when this transport cannot tunnel (an HTTP/2 stream).
    func startTunnel(_ head: ClientResponseHead, upstream: UpstreamTunnelEnd) -> Bool
}
