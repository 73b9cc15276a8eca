public import NIOCore

/// swift-nio-http2's denial-of-service rules, carried over one by one for the nghttp2 connections (its
/// `DOSHeuristics`, `GlitchesMonitor` and sequential-CONTINUATION limit, with its default numbers). Each frame's
/// header is judged before its payload is read; what breaks a rule ends the connection with GOAWAY
/// ENHANCE_YOUR_CALM naming no stream (NIO's "misbehaving peer"), or PROTOCOL_ERROR for a header block larger
/// than the list may be. nghttp2 itself bounds the control frames it has to answer (`maxBufferedControlFrames`).
public struct HTTP2FloodDefence {
    /// More than this many in `rateWindow`: RST_STREAM frames (CVE-2023-44487, rapid reset), control frames
    /// (PING, SETTINGS, PRIORITY and the like), stream errors.
    public static let maxPerWindow = 200
    public static let rateWindow = TimeAmount.seconds(30)
    /// Empty DATA frames in a row (no END_STREAM), between frames that do work.
    public static let maxSequentialEmptyData = 1
    /// CONTINUATION frames in a row (CVE-2024-28182's CPU flavour).
    public static let maxSequentialContinuations = 5
    /// Stream errors over the connection's life.
    public static let maxGlitches = 200
    /// Outbound control frames (PING and SETTINGS acknowledgements) that may wait for a client that does not read.
    public static let maxBufferedControlFrames = 10_000

    private let headerListCeiling: Int
    private var resets = RateLimit()
    private var controlFrames = RateLimit()
    private var streamErrors = RateLimit()
    private var glitches = 0
    private var emptyData = 0
    private var continuations = 0
    /// The encoded header block read so far (HEADERS and its CONTINUATIONs).
    private var blockBytes = 0

    /// Whether RST_STREAM frames count (not from an upstream: it may reset every stream it answered early).
    private let countsResets: Bool

    /// `headerListCeiling`: what one header block may take encoded (SETTINGS_MAX_HEADER_LIST_SIZE; decoded, the
    /// session's `HTTP2DecodedBlock` holds it to the same).
    public init(headerListCeiling: Int, countsResets: Bool = true) {
        self.headerListCeiling = headerListCeiling
        self.countsResets = countsResets
    }

    private static let calm = HTTP2ConnectionError(code: HTTP2ConnectionError.enhanceYourCalm, lastStream: 0)

    /// A frame's header, before its payload.
    public mutating func frameBegins(_ frame: NGHTTP2Session.FrameHeader, now: @autoclosure () -> NIODeadline) -> HTTP2ConnectionError? {
        switch frame.type {
        case NGHTTP2Session.FrameHeader.headers:
            emptyData = 0
            continuations = 0
            blockBytes = frame.length
        case NGHTTP2Session.FrameHeader.continuation:
            continuations += 1
            blockBytes += frame.length
            if continuations > Self.maxSequentialContinuations { return Self.calm }
        case NGHTTP2Session.FrameHeader.rstStream:
            if countsResets && resets.record(now()) { return Self.calm }
        case NGHTTP2Session.FrameHeader.ping, NGHTTP2Session.FrameHeader.settings, NGHTTP2Session.FrameHeader.priority,
             0xa /* ALTSVC */, 0xc /* ORIGIN */:
            if controlFrames.record(now()) { return Self.calm }
        default:
            break
        }
        if blockBytes > headerListCeiling { return HTTP2ConnectionError(code: HTTP2ConnectionError.protocolError, lastStream: nil) }
        return nil
    }

    /// A DATA frame was read: empty ones in a row are a flood, END_STREAM is work.
    public mutating func dataFrameEnded(payloadBytes: Int, endStream: Bool) -> HTTP2ConnectionError? {
        if payloadBytes == 0 { emptyData += 1 }
        if endStream { emptyData = 0 }
        return emptyData > Self.maxSequentialEmptyData ? Self.calm : nil
    }

    /// A stream was reset for a fault of the peer's.
    public mutating func streamError(now: NIODeadline) -> HTTP2ConnectionError? {
        glitches += 1
        if streamErrors.record(now) || glitches > Self.maxGlitches { return Self.calm }
        return nil
    }

    /// Events in the last `rateWindow`: too many once there are more than `maxPerWindow`.
    struct RateLimit {
        private var times: CircularBuffer<NIODeadline>?

        /// Records one at `now`: whether the rate is now too high.
        mutating func record(_ now: NIODeadline) -> Bool {
            if times == nil { times = CircularBuffer(initialCapacity: 16) }
            while let first = times?.first, now - first > HTTP2FloodDefence.rateWindow { _ = times?.popFirst() }
            times?.append(now)
            return (times?.count ?? 0) > HTTP2FloodDefence.maxPerWindow
        }
    }
}
