public import NIOCore

/// A connection's buffer for what it writes again and again (a head per request): each use takes back the last
/// one's storage once the channel has let go of it (the write went out), so a warm connection's heads cost no
/// allocation. While the channel still holds the last bytes (a write not yet on the wire, a slice kept elsewhere)
/// the storage is shared and a new one is allocated: reuse never writes over bytes in flight.
public struct ReusedBuffer: Sendable {
    /// A buffer grown past this (a huge head) is not kept: an idle connection holds at most this much.
    public static let maxKeptCapacity = 16 * 1024
    private var kept: ByteBuffer?

    public init() {}

    /// An empty buffer of at least `capacity` bytes: the kept storage when nothing else holds it.
    public mutating func take(capacity: Int, allocator: ByteBufferAllocator) -> ByteBuffer {
        guard var buffer = kept.take() else { return allocator.buffer(capacity: capacity) }
        buffer.clear(minimumCapacity: capacity)
        return buffer
    }

    /// Keeps `buffer`'s storage for the next `take` (shared with the write that sends it until that is done).
    public mutating func keep(_ buffer: ByteBuffer) {
        kept = buffer.capacity <= Self.maxKeptCapacity ? buffer : nil
    }
}
