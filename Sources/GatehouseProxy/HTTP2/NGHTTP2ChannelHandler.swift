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
    /// The body credits written and not yet on the socket.
    var writeLedger: HTTP2WriteLedger { get }
    /// `credit`'s bytes are on the socket: its stream's watermarks count them no more.
    func sessionWrote(_ credit: HTTP2WriteCredit)
}

extension NGHTTP2ChannelHandler {
    package func sessionWrite(_ bytes: ByteBuffer, completion: HTTP2WriteCompletion) {
        guard let context else { return completion.fail() }
        switch completion {
        case .none:
            context.write(wrapOutboundOut(bytes), promise: nil)
        case .promise(let promise):
            context.write(wrapOutboundOut(bytes), promise: promise)
        case .credit(let credit):
            context.write(wrapOutboundOut(bytes), promise: nil)
            writeLedger.written(credit)
        }
    }

    /// A session that is done (after a GOAWAY, every stream over; or failed) is closed once flushed. The body credits
    /// written since the last flush are settled once the batch's marker is on the socket.
    package func sessionFlush() {
        guard let context else { return }
        if let count = writeLedger.closeBatch() {
            let promise = context.eventLoop.makePromise(of: Void.self)
            context.write(wrapOutboundOut(writeLedger.marker), promise: promise)
            promise.futureResult.assumeIsolated().whenComplete { _ in
                self.writeLedger.settle(count) { self.sessionWrote($0) }
            }
        }
        context.flush()
        if session?.isDone == true { context.close(promise: nil) }
    }
}
