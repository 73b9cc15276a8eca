public import NIOCore

/// What one stream of an nghttp2 connection has to send after its HEADERS, waiting for its DATA frames: the body's
/// buffers with what their trip to the socket completes (`HTTP2WriteCompletion`), and its end (with trailers, if any). nghttp2 asks how
/// much the next frame carries (`nextTurn`), then the connection writes that much of it as slices (`take`).
/// A class: the session reaches a stream's queue through its dictionary several times per body, and a struct's
/// in-place change through `Dictionary`'s subscript allocated the accessor's frame each time (two mallocs a call).
public final class HTTP2OutboundQueue {
    @usableFromInline var queued = CircularBuffer<(bytes: ByteBuffer, completion: HTTP2WriteCompletion)>(initialCapacity: 2)
    @usableFromInline var queuedBytes = 0
    public private(set) var ended = false
    @usableFromInline var trailers: HTTP2FieldList?

    public init() {}

    public func append(_ bytes: ByteBuffer, completion: HTTP2WriteCompletion) {
        queued.append((bytes, completion))
        queuedBytes += bytes.readableBytes
    }

    /// The body ends after what is queued, with `trailers` if any.
    public func end(trailers: HTTP2FieldList?) {
        ended = true
        self.trailers = trailers
    }

    /// How much the next DATA frame carries, `limit` at most.
    public func nextTurn(limit: Int) -> NGHTTP2Session.DataTurn {
        let count = min(limit, queuedBytes)
        if count == 0 && !ended { return .deferred }
        guard count == queuedBytes && ended else { return .send(count, endsBody: false, trailers: nil) }
        let trailers = self.trailers
        self.trailers = nil
        return .send(count, endsBody: true, trailers: trailers)
    }

    /// `length` bytes off the front, each piece handed to `write` with what the buffer it ends completes; an empty
    /// buffer goes with the frame that carries the bytes before it.
    public func take(_ length: Int, _ write: (ByteBuffer, HTTP2WriteCompletion) -> Void) {
        var left = length
        while left > 0, let (bytes, completion) = queued.popFirst() {
            if bytes.readableBytes > left {
                var rest = bytes
                let part = rest.readSlice(length: left)!  // safe: more than `left` readable
                queued.prepend((rest, completion))
                write(part, .none)
                queuedBytes -= left
                left = 0
            } else {
                left -= bytes.readableBytes
                queuedBytes -= bytes.readableBytes
                write(bytes, completion)
            }
        }
        while queuedBytes == 0, let (bytes, completion) = queued.first, bytes.readableBytes == 0 {
            _ = queued.popFirst()
            write(bytes, completion)
        }
    }

    /// The stream is gone: nothing queued will be written.
    public func fail() {
        while let (_, completion) = queued.popFirst() { completion.fail() }
        queuedBytes = 0
    }
}
