/// A request's `content-length` held against the DATA that follows it (RFC 9113 §8.1.1: a mismatch makes the
/// message malformed, and the stream is reset), as swift-nio-http2 checked it: no more bytes than declared, and
/// none missing when the stream ends. Without it, an HTTP/1.1 upstream would read the excess as the start of the
/// next request on its connection.
public struct HTTP2DeclaredLength {
    private var left: Int?

    /// `declared`: the head's `content-length`, if it had one.
    public init(declared: Int?) {
        left = declared
    }

    /// DATA bytes arrived, perhaps with the stream's end: whether they still fit what was declared.
    public mutating func received(_ bytes: Int, endStream: Bool) -> Bool {
        guard let remaining = left else { return true }
        guard bytes <= remaining else { return false }
        left = remaining - bytes
        return !endStream || remaining == bytes
    }
}
