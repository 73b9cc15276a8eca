package import NIOCore
package import GatehouseHTTP

/// What one stream of an `HTTP2ServerConnection` is to the connection: it takes the stream's header blocks and
/// DATA, hears of the read's end, of its close and of the connection's writability, and has deadlines. The client
/// port's streams drive the request core (`HTTP2ServerStream`); the ext_authz port's answer a Check.
package protocol HTTP2ServerStreamHandling: AnyObject {
    /// A header block or DATA of this stream, within the connection's read.
    func received(_ part: consuming HTTP2StreamPart)
    /// The stream received something in the current read (called once per read, before `readComplete`).
    func readBegan()
    /// The connection's read is over.
    func readComplete()
    /// The stream is closed (both sides ended, a reset either way, the connection gone).
    func closed()
    func connectionBecameWritable()
    /// `bytes` of the stream's DATA are on the socket.
    func wrote(_ bytes: Int)
    /// The frame that ends the stream on our side went out.
    func endWentOut()
    /// The connection's timer fired: returns the stream's next deadline ahead, if any.
    func deadlinePassed(now: NIODeadline) -> NIODeadline?
}

/// Makes the streams of one connection, given the connection and the stream's id.
package typealias HTTP2StreamMaker = (HTTP2ServerConnection, Int32) -> any HTTP2ServerStreamHandling
