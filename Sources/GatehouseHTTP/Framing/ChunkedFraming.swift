public import NIOCore

/// Chunked transfer coding on the way out (RFC 9112 §7.1): each body buffer becomes one chunk,
/// written as three buffers so the data itself is never copied.
public enum ChunkedFraming {
    /// Writes `buffer` as one chunk; an empty buffer writes nothing (it would end the body).
    public static func writeChunk(_ buffer: ByteBuffer, to write: (ByteBuffer) -> Void, allocator: ByteBufferAllocator) {
        guard buffer.readableBytes > 0 else { return }
        var size = allocator.buffer(capacity: 18)
        size.writeString(String(buffer.readableBytes, radix: 16))
        size.writeStaticString("\r\n")
        write(size)
        write(buffer)
        write(crlf(allocator))
    }

    public static func lastChunk(_ allocator: ByteBufferAllocator) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: 5)
        buffer.writeStaticString("0\r\n\r\n")
        return buffer
    }

    private static func crlf(_ allocator: ByteBufferAllocator) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: 2)
        buffer.writeStaticString("\r\n")
        return buffer
    }
}
