public import NIOCore
public import NIOHTTP2

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
///
/// NIO's GOAWAY for a connection error names the highest possible stream (2^31-1: "any stream may have
/// been processed"). Every stream Gatehouse may have processed is one NIO reported open, so the guard
/// writes the last of those instead (RFC 9113 §6.8): the client knows that later streams were not.
public final class HTTP2ConnectionGuard: ChannelDuplexHandler {
    public typealias InboundIn = ByteBuffer
    public typealias InboundOut = ByteBuffer
    public typealias OutboundIn = IOData
    public typealias OutboundOut = IOData

    private let drainTimeout: TimeAmount
    private var context: ChannelHandlerContext?
    /// Told by `HTTP2ServerConnectionHandler` as streams open and close.
    public var openStreams = 0
    /// The highest stream NIO reported open.
    public var lastStreamID = HTTP2StreamID.rootStream
    /// The last stream an error GOAWAY named once rewritten: should NIO, which thinks it named 2^31-1, take a new
    /// stream while earlier ones finish, the stream handlers refuse any above this (RFC 9113 §6.8).
    public private(set) var announcedLastStreamID: HTTP2StreamID?

    // The outbound frame being read: its header so far, then how much payload is left.
    private var header: [UInt8] = []
    private var payloadLeft = 0
    private var goAwayPayload: [UInt8]?

    private var closeAfterFlush = false
    private var closeWhenNoStreams = false
    private var closing = false
    private var backstop: Scheduled<Void>?

    public init(drainTimeout: TimeAmount) {
        self.drainTimeout = drainTimeout
        header.reserveCapacity(9)
    }

    public func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        backstop?.cancel()
        self.context = nil
    }

    public func channelInactive(context: ChannelHandlerContext) {
        backstop?.cancel()
        context.fireChannelInactive()
    }

    public func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed {
            // HTTP/2 has no half-closed connections: nothing more can come (not even a WINDOW_UPDATE).
            close(context)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .byteBuffer(var buffer) = unwrapOutboundIn(data) else {
            context.write(data, promise: promise)
            return
        }
        if scan(&buffer) {
            context.write(wrapOutboundOut(.byteBuffer(buffer)), promise: promise)
        } else {
            context.write(data, promise: promise)
        }
    }

    public func flush(context: ChannelHandlerContext) {
        context.flush()
        if closeAfterFlush { close(context) }
    }

    /// A stream above the last one the error GOAWAY named: refused (REFUSED_STREAM), never processed.
    public func refusesNewStream(_ id: HTTP2StreamID) -> Bool {
        announcedLastStreamID.map { id > $0 } ?? false
    }

    public func streamClosed() {
        if closeWhenNoStreams, openStreams <= 0, let context { close(context) }
    }

    /// Closes on the next tick: NIO's handler may be in the middle of a read or a flush.
    private func close(_ context: ChannelHandlerContext) {
        guard !closing else { return }
        closing = true
        backstop?.cancel()
        context.eventLoop.assumeIsolated().execute { context.close(promise: nil) }
    }

    /// Follows the frames NIO writes, in whatever pieces they come, for their GOAWAYs; returns whether
    /// it rewrote one's last stream id.
    private func scan(_ buffer: inout ByteBuffer) -> Bool {
        var rewrote = false
        var bytes = buffer.readableBytesView[...]
        while !bytes.isEmpty {
            if payloadLeft == 0 && goAwayPayload == nil {
                let take = min(9 - header.count, bytes.count)
                header.append(contentsOf: bytes.prefix(take))
                bytes = bytes.dropFirst(take)
                guard header.count == 9 else { return rewrote }
                payloadLeft = Int(header[0]) << 16 | Int(header[1]) << 8 | Int(header[2])
                if header[3] == 0x7, payloadLeft >= 8 { goAwayPayload = [] }  // GOAWAY
                header.removeAll(keepingCapacity: true)
                continue
            }
            if var goAway = goAwayPayload {
                let take = min(8 - goAway.count, bytes.count)
                let start = bytes.startIndex
                goAway.append(contentsOf: bytes.prefix(take))
                bytes = bytes.dropFirst(take)
                payloadLeft -= take
                goAwayPayload = goAway.count == 8 ? nil : goAway
                guard goAway.count == 8 else { continue }
                // NIO writes a GOAWAY in one piece: its payload is rewritten where it lies.
                if take == 8, let last = rewrittenLastStreamID(goAway) {
                    buffer.setInteger(last, at: start)
                    goAway.replaceSubrange(0..<4, with: withUnsafeBytes(of: last.bigEndian, Array.init))
                    rewrote = true
                }
                sentGoAway(goAway)
                continue
            }
            let skip = min(payloadLeft, bytes.count)
            bytes = bytes.dropFirst(skip)
            payloadLeft -= skip
        }
        return rewrote
    }

    /// The last stream NIO reported open, for a GOAWAY with an error that names every stream.
    private func rewrittenLastStreamID(_ payload: [UInt8]) -> UInt32? {
        let named = (UInt32(payload[0]) << 24 | UInt32(payload[1]) << 16 | UInt32(payload[2]) << 8 | UInt32(payload[3])) & 0x7FFF_FFFF
        let errorCode = UInt32(payload[4]) << 24 | UInt32(payload[5]) << 16 | UInt32(payload[6]) << 8 | UInt32(payload[7])
        guard named == 0x7FFF_FFFF, errorCode != 0 else { return nil }
        announcedLastStreamID = lastStreamID
        return UInt32(Int32(lastStreamID))
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
