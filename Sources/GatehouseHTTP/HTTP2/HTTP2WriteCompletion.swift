public import NIOCore

/// What a queued DATA buffer's trip to the socket completes: nothing, a promise, or a credit the connection gives its
/// stream back once the bytes are on the socket (`HTTP2WriteCredit`), with no promise or closure of the buffer's own.
public enum HTTP2WriteCompletion {
    case none
    case promise(EventLoopPromise<Void>)
    case credit(HTTP2WriteCredit)

    /// Fails a promise; a credit is dropped with its stream.
    public func fail() {
        if case .promise(let promise) = self { promise.fail(ChannelError.ioOnClosedChannel) }
    }
}

/// `bytes` of `stream`'s body, counted against its watermarks until they are on the socket.
public struct HTTP2WriteCredit: Sendable {
    public let stream: Int32
    public let bytes: Int

    public init(stream: Int32, bytes: Int) {
        self.stream = stream
        self.bytes = bytes
    }
}
