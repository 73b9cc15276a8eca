public import NIOCore

/// The flow control Gatehouse keeps for one HTTP/2 stream, at either end (a client's stream, `HTTP2ServerStream`; a
/// stream to the upstream, `HTTP2UpstreamLeg`):
/// - inbound, what arrives while its reader does not read is held, in order; the stream's window opens only as DATA
///   is handed on (the stream tells its connection, which tells nghttp2 what was consumed): a slow reader slows the
///   sender;
/// - outbound, the bytes written and not yet handed to the socket: past `highWatermark` the stream is not writable
///   (its writer stops reading the other side) until they fall under `lowWatermark`.
@frozen public struct HTTP2StreamFlow<Part> {
    public static var highWatermark: Int { 64 * 1024 }
    public static var lowWatermark: Int { 32 * 1024 }

    /// Parts held while the reader does not read: made for the first one, as most streams never hold one (an empty
    /// `CircularBuffer` allocates its storage, and so does emptying one).
    @usableFromInline var held: CircularBuffer<Part>?
    /// The reader asked for more: parts are handed on as they arrive, until the read ends.
    @usableFromInline var _readRequested = true
    @usableFromInline var _pendingBytes = 0
    @usableFromInline var _pendingWrites = 0
    @usableFromInline var _isWritable = true

    @inlinable public init() {}

    @inlinable public var readRequested: Bool { _readRequested }
    @inlinable public var pendingBytes: Int { _pendingBytes }
    @inlinable public var pendingWrites: Int { _pendingWrites }
    @inlinable public var hasHeldFrames: Bool { !(held?.isEmpty ?? true) }
    /// Not writable from the write that reaches `highWatermark` until the bytes pending fall under `lowWatermark`,
    /// whatever steps they fall by.
    @inlinable public var isWritable: Bool { _isWritable }

    // MARK: Inbound

    /// A part arrived: handed back to be delivered now, or held (nil).
    @inlinable public mutating func arrived(_ part: consuming Part) -> Part? {
        if _readRequested && !hasHeldFrames { return part }
        if held == nil { held = CircularBuffer(initialCapacity: 4) }
        held?.append(part)
        return nil
    }

    /// The next held part to deliver, while the reader reads.
    @inlinable public mutating func nextHeld() -> Part? {
        guard _readRequested else { return nil }
        return held?.popFirst()
    }

    @inlinable public mutating func requestRead() { _readRequested = true }
    /// The read ended: parts are held until the reader asks again.
    @inlinable public mutating func readEnded() { _readRequested = false }
    @inlinable public mutating func dropHeld() { held = nil }

    // MARK: Outbound

    @inlinable public mutating func writing(_ bytes: Int) {
        _pendingWrites += 1
        _pendingBytes += bytes
        if _pendingBytes >= Self.highWatermark { _isWritable = false }
    }

    /// A write reached the socket (or failed): whether the stream just became writable again. The edge is told once,
    /// when the bytes pending fall under `lowWatermark`: judged against the high one instead, a fall from over it to
    /// between the two, then under the low one, was never told (a writer that had stopped waited for a timeout).
    @inlinable public mutating func wrote(_ bytes: Int) -> Bool {
        _pendingWrites -= 1
        _pendingBytes -= bytes
        guard !_isWritable, _pendingBytes < Self.lowWatermark else { return false }
        _isWritable = true
        return true
    }
}
