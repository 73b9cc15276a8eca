import NIOCore
import Testing
import GatehouseHTTP

/// A connection's head buffer is used again only when nothing else holds its bytes: a write still in flight (or
/// a slice kept elsewhere) keeps what it sends, and the next head gets fresh storage.
struct ReusedBufferTests {
    static func storageAddress(_ buffer: ByteBuffer) -> UInt? {
        buffer.withUnsafeReadableBytes { $0.baseAddress.map { UInt(bitPattern: $0) } }
    }

    @Test func theStorageIsTakenAgainOnceTheLastBytesAreGone() {
        var reused = ReusedBuffer()
        var first = reused.take(capacity: 64, allocator: ByteBufferAllocator())
        first.writeString("HTTP/1.1 200 OK\r\n")
        let address = Self.storageAddress(first)
        reused.keep(first)
        first = ByteBuffer()  // the channel wrote it and let go
        var second = reused.take(capacity: 64, allocator: ByteBufferAllocator())
        #expect(second.readableBytes == 0)
        second.writeString("HTTP/1.1 204 No Content\r\n")
        #expect(Self.storageAddress(second) == address)
    }

    @Test func bytesStillInFlightAreNeverWrittenOver() {
        var reused = ReusedBuffer()
        var first = reused.take(capacity: 64, allocator: ByteBufferAllocator())
        first.writeString("in flight")
        reused.keep(first)
        var second = reused.take(capacity: 64, allocator: ByteBufferAllocator())  // `first` is still held
        second.writeString("the next head")
        #expect(String(buffer: first) == "in flight")
        #expect(Self.storageAddress(second) != Self.storageAddress(first))
    }

    @Test func aBufferGrownPastTheLimitIsNotKept() {
        var reused = ReusedBuffer()
        var huge = reused.take(capacity: ReusedBuffer.maxKeptCapacity + 1, allocator: ByteBufferAllocator())
        huge.writeString("a very large head")
        reused.keep(huge)
        huge = ByteBuffer()
        let next = reused.take(capacity: 16, allocator: ByteBufferAllocator())
        #expect(next.capacity < ReusedBuffer.maxKeptCapacity)
    }
}
