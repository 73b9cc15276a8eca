import NIOCore
import NIOHTTP2

/// Closes the client connections NIO's HTTP/2 handler has given up on. On a connection error (a
/// flood caught by its DoS heuristics: rapid reset, CONTINUATION or control-frame floods, an HPACK
/// bomb, a protocol violation) NIO writes GOAWAY with the error code, then goes on reading and
/// answering whatever the peer still sends (one more GOAWAY per frame of a flood) and never closes
/// the socket; nor does it close when the peer's side is closed (we accept half-closure for
/// HTTP/1.1), nor bound a graceful GOAWAY whose PING the peer never acknowledges. An attacker could
/// so keep connections (sockets, buffered answers) open at will. RFC 9113 §5.4.1: "After sending
/// the GOAWAY frame for an error condition, the endpoint MUST close the TCP connection."
///
/// Sits between the socket and NIO's handler and reads the frame headers of what NIO writes:
/// - GOAWAY with an error and last stream 0 (NIO's "misbehaving peer": every stream is already
///   ended): closed once the GOAWAY is flushed;
/// - GOAWAY with an error and a last stream (streams in flight may finish, e.g. a stream beyond
///   SETTINGS_MAX_CONCURRENT_STREAMS): closed when the last open stream ends, `drain_timeout` at most;
/// - GOAWAY without error (idle connection, graceful stop): closed after `drain_timeout` at the
///   latest, whether or not the peer acknowledges the manager's PING;
/// - the peer closed its side: closed.
final class HTTP2ConnectionGuard: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private let drainTimeout: TimeAmount
    private var context: ChannelHandlerContext?
    /// Told by `HTTP2ServerConnectionHandler` as streams open and close.
    var openStreams = 0

    // The outbound frame being read: its header so far, then how much payload is left.
    private var header: [UInt8] = []
    private var payloadLeft = 0
    private var goAwayPayload: [UInt8]?

    private var closeAfterFlush = false
    private var closeWhenNoStreams = false
    private var closing = false
    private var backstop: Scheduled<Void>?

    init(drainTimeout: TimeAmount) {
        self.drainTimeout = drainTimeout
        header.reserveCapacity(9)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        backstop?.cancel()
        self.context = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        backstop?.cancel()
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed {
            // HTTP/2 has no half-closed connections: nothing more can come (not even a WINDOW_UPDATE).
            close(context)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .byteBuffer(let buffer) = unwrapOutboundIn(data) { scan(buffer) }
        context.write(data, promise: promise)
    }

    func flush(context: ChannelHandlerContext) {
        context.flush()
        if closeAfterFlush { close(context) }
    }

    func streamClosed() {
        if closeWhenNoStreams, openStreams <= 0, let context { close(context) }
    }

    /// Closes on the next tick: NIO's handler may be in the middle of a read or a flush.
    private func close(_ context: ChannelHandlerContext) {
        guard !closing else { return }
        closing = true
        backstop?.cancel()
        context.eventLoop.assumeIsolated().execute { context.close(promise: nil) }
    }

    /// Follows the frames NIO writes, in whatever pieces they come, for their GOAWAYs.
    private func scan(_ buffer: ByteBuffer) {
        var bytes = buffer.readableBytesView[...]
        while !bytes.isEmpty {
            if payloadLeft == 0 && goAwayPayload == nil {
                let take = min(9 - header.count, bytes.count)
                header.append(contentsOf: bytes.prefix(take))
                bytes = bytes.dropFirst(take)
                guard header.count == 9 else { return }
                payloadLeft = Int(header[0]) << 16 | Int(header[1]) << 8 | Int(header[2])
                if header[3] == 0x7, payloadLeft >= 8 { goAwayPayload = [] }  // GOAWAY
                header.removeAll(keepingCapacity: true)
                continue
            }
            if var goAway = goAwayPayload {
                let take = min(8 - goAway.count, bytes.count)
                goAway.append(contentsOf: bytes.prefix(take))
                bytes = bytes.dropFirst(take)
                payloadLeft -= take
                goAwayPayload = goAway.count == 8 ? nil : goAway
                if goAway.count == 8 { sentGoAway(goAway) }
                continue
            }
            let skip = min(payloadLeft, bytes.count)
            bytes = bytes.dropFirst(skip)
            payloadLeft -= skip
        }
    }

    private func sentGoAway(_ payload: [UInt8]) {
        let lastStreamID = (UInt32(payload[0]) << 24 | UInt32(payload[1]) << 16 | UInt32(payload[2]) << 8 | UInt32(payload[3])) & 0x7FFF_FFFF
        let errorCode = UInt32(payload[4]) << 24 | UInt32(payload[5]) << 16 | UInt32(payload[6]) << 8 | UInt32(payload[7])
        if errorCode != 0 && (lastStreamID == 0 || openStreams <= 0) {
            closeAfterFlush = true
        } else if errorCode != 0 {
            closeWhenNoStreams = true
        }
        guard backstop == nil, let context else { return }
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        backstop = context.eventLoop.scheduleTask(in: drainTimeout) {
            guard let context = loopBound.value.context else { return }
            loopBound.value.close(context)
        }
    }
}
