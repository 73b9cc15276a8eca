public import NIOCore

/// Gathers what NIO's HTTP/2 handler writes between two flushes into one buffer. NIO writes every frame on its
/// own (a HEADERS, a DATA frame's header, its payload), each in a buffer it must then allocate anew because the
/// socket still holds the last one: an answer of HEADERS, DATA and trailers is four writes, four allocations and
/// four iovecs. Gathered, a flush is one write of one buffer.
///
/// A write with a promise (its writer waits on it), a large buffer (a relayed DATA payload: passed on, not copied)
/// or a file region is passed on as it is, after what was gathered before it, so the order of bytes never changes.
/// Sits just below NIO's handler on every HTTP/2 connection (the client and ext_authz ports, where
/// `HTTP2ConnectionGuard` below it reads the frames as they go, and the upstream pool's).
public final class HTTP2WriteCoalescer: ChannelOutboundHandler {
    public init() {}

    public typealias OutboundIn = IOData
    public typealias OutboundOut = IOData

    /// A buffer larger than this is passed on as it is.
    public static let largestCopied = 4096
    /// Gathered bytes are passed on once this many wait, flush or not.
    public static let mostGathered = 64 << 10

    private var gathered: ByteBuffer?

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if promise == nil, case .byteBuffer(var buffer) = unwrapOutboundIn(data), buffer.readableBytes <= Self.largestCopied {
            if gathered == nil { gathered = context.channel.allocator.buffer(capacity: 4096) }
            gathered!.writeBuffer(&buffer)
            if gathered!.readableBytes >= Self.mostGathered { passGathered(context) }
            return
        }
        passGathered(context)
        context.write(data, promise: promise)
    }

    public func flush(context: ChannelHandlerContext) {
        passGathered(context)
        context.flush()
    }

    private func passGathered(_ context: ChannelHandlerContext) {
        guard let buffer = gathered else { return }
        gathered = nil
        context.write(wrapOutboundOut(.byteBuffer(buffer)), promise: nil)
    }
}
