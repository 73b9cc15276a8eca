public import NIOCore
public import NIOHTTP2

/// The flow control Gatehouse keeps for one HTTP/2 stream, at either end (a client's stream,
/// `HTTP2ServerStream`; a stream to the upstream, `HTTP2UpstreamLeg`):
/// - inbound, frames that arrive while their reader does not read are held, and the stream's window
///   (`InboundFlowWindow`) is opened again only as they are handed on: a slow reader slows the sender;
/// - outbound, the bytes written and not yet handed to the socket: past `highWatermark` the stream is
///   not writable (its writer stops reading the other side) until they fall under `lowWatermark`.
/// What a stream's reader is handed: a frame's DATA bytes count against the stream's window.
public protocol HTTP2FlowControlledPart {
    var flowControlledBytes: Int { get }
}

extension HTTP2Frame.FramePayload: HTTP2FlowControlledPart {
    @inlinable public var flowControlledBytes: Int {
        if case .data(let data) = self { data.data.readableBytes } else { 0 }
    }
}

@frozen public struct HTTP2StreamFlow<Part: HTTP2FlowControlledPart> {
    public static var highWatermark: Int { 64 * 1024 }
    public static var lowWatermark: Int { 32 * 1024 }

    @usableFromInline var window: InboundFlowWindow
    /// Frames held while the reader does not read: made for the first one, as most streams never hold one (an empty
    /// `CircularBuffer` allocates its storage, and so does emptying one).
    @usableFromInline var held: CircularBuffer<Part>?
    /// The reader asked for more: frames are handed on as they arrive, until the read ends.
    @usableFromInline var _readRequested = true
    @usableFromInline var _pendingBytes = 0
    @usableFromInline var _pendingWrites = 0
    /// DATA bytes of held frames handed on since the window was last told of them.
    @usableFromInline var releasedBytes = 0

    @inlinable public init(targetWindow: Int) {
        window = InboundFlowWindow(target: targetWindow)
    }

    @inlinable public var readRequested: Bool { _readRequested }
    @inlinable public var pendingBytes: Int { _pendingBytes }
    @inlinable public var pendingWrites: Int { _pendingWrites }
    @inlinable public var hasHeldFrames: Bool { !(held?.isEmpty ?? true) }
    @inlinable public var isUnderHighWatermark: Bool { _pendingBytes < Self.highWatermark }

    // MARK: Inbound

    /// A frame arrived: handed back to be delivered now, or held (nil).
    @inlinable public mutating func arrived(_ payload: Part) -> Part? {
        if _readRequested && !hasHeldFrames { return payload }
        window.held(payload.flowControlledBytes)
        if held == nil { held = CircularBuffer(initialCapacity: 4) }
        held?.append(payload)
        return nil
    }

    /// The next held frame to deliver, while the reader reads.
    @inlinable public mutating func nextHeld() -> Part? {
        guard _readRequested, let payload = held?.popFirst() else { return nil }
        releasedBytes += payload.flowControlledBytes
        return payload
    }

    /// The held frames taken by `nextHeld()` were delivered: the window increment to send, if any.
    @inlinable public mutating func heldFramesDelivered() -> Int? {
        let bytes = releasedBytes
        releasedBytes = 0
        return bytes > 0 ? window.released(bytes) : nil
    }

    /// NIO reported the stream's inbound window: the increment to send, if any.
    @inlinable public mutating func windowChanged(to size: Int) -> Int? {
        window.windowChanged(to: size)
    }

    @inlinable public mutating func requestRead() { _readRequested = true }
    /// The read ended: frames are held until the reader asks again.
    @inlinable public mutating func readEnded() { _readRequested = false }
    @inlinable public mutating func dropHeld() { held = nil }

    // MARK: Outbound

    @inlinable public mutating func writing(_ bytes: Int) {
        _pendingWrites += 1
        _pendingBytes += bytes
    }

    /// A write reached the socket (or failed): whether the stream just became writable again.
    @inlinable public mutating func wrote(_ bytes: Int) -> Bool {
        let wasWritable = isUnderHighWatermark
        _pendingWrites -= 1
        _pendingBytes -= bytes
        return !wasWritable && _pendingBytes < Self.lowWatermark
    }
}
