public import NIOCore


/// What an `NGHTTP2Session` tells the connection it serves, from inside `receive` and `send`.
public protocol NGHTTP2SessionDelegate: AnyObject {
    /// A frame's header, before its payload: every frame the peer sends passes here first (the flood defences).
    /// Returns the connection error to end the session with, or nil to go on.
    func sessionBeginsFrame(_ frame: NGHTTP2Session.FrameHeader) -> HTTP2ConnectionError?
    /// A header block begins on `stream`: a new stream's first (`opensStream`), or its trailers.
    func sessionBeginsBlock(of stream: Int32, opensStream: Bool)
    /// The last stream the connection took (its GOAWAY for an error names it, RFC 9113 §6.8).
    var sessionLastStreamTaken: Int32 { get }
    /// The block was read whole: its fields as they came (`HTTP2DecodedBlock`), the one reference to them. A
    /// connection error ends the session.
    func sessionEndedBlock(of stream: Int32, fields: consuming HTTP2FieldList, endStream: Bool) -> HTTP2ConnectionError?
    /// DATA bytes (a slice of the input where they lie in it), as they arrive.
    func sessionReceivedData(of stream: Int32, _ bytes: ByteBuffer)
    /// A DATA frame was read whole: how many bytes it carried (padding aside), and whether it ended the stream.
    func sessionEndedData(of stream: Int32, payloadBytes: Int, endStream: Bool) -> HTTP2ConnectionError?
    /// nghttp2 refused a frame of the peer's at stream level (it resets the stream): a glitch.
    func sessionRefusedFrame(of stream: Int32) -> HTTP2ConnectionError?
    func sessionClosed(stream: Int32, errorCode: UInt32)
    /// A frame that ended `stream` on our side went out.
    func sessionSentEnd(of stream: Int32)
    /// Bytes to write to the socket, in order: serialized frames, or a queued body's slice with what the buffer it
    /// ends completes.
    func sessionWrite(_ bytes: ByteBuffer, completion: HTTP2WriteCompletion)
    /// What was sent is to be flushed now (`sendNow`, the end of a read, or a `sendSoon`).
    func sessionFlush()
}

/// A connection error to end an HTTP/2 session with: GOAWAY with this code and last stream.
public struct HTTP2ConnectionError: Error, Equatable, Sendable {
    public var code: UInt32
    /// Streams up to this one may have been processed; nil: the last one the connection took.
    public var lastStream: Int32?

    public init(code: UInt32, lastStream: Int32?) {
        self.code = code
        self.lastStream = lastStream
    }

    public static let protocolError: UInt32 = 0x1
    public static let cancel: UInt32 = 0x8
    public static let refusedStream: UInt32 = 0x7
    public static let compressionError: UInt32 = 0x9
    public static let enhanceYourCalm: UInt32 = 0xb
}
