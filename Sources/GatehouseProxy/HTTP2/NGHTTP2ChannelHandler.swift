package import NIOCore
package import GatehouseHTTP

/// What both nghttp2 connections do alike with their channel (a port's, `HTTP2ServerConnection`; an upstream's,
/// `HTTP2UpstreamConnection`): the session's bytes are written to it, and a session that is done closes it once
/// what it wrote is flushed.
package protocol NGHTTP2ChannelHandler: ChannelInboundHandler, NGHTTP2SessionDelegate where OutboundOut == ByteBuffer {
    /// The handler's context while it is in the pipeline.
    var context: ChannelHandlerContext? { get }
    /// The connection's session, until the handler leaves the pipeline.
    var session: NGHTTP2Session? { get }
}

extension NGHTTP2ChannelHandler {
    package func sessionWrite(_ bytes: ByteBuffer, promise: EventLoopPromise<Void>?) {
        guard let context else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        context.write(wrapOutboundOut(bytes), promise: promise)
    }

    /// A session that is done (after a GOAWAY, every stream over; or failed) is closed once flushed.
    package func sessionFlush() {
        guard let context else { return }
        context.flush()
        if session?.isDone == true { context.close(promise: nil) }
    }
}
