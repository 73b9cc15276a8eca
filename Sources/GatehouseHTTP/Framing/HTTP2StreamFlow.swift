import NIOCore
public import NIOHTTP2

/// The flow control Gatehouse keeps for one HTTP/2 stream, at either end (a client's stream,
/// `HTTP2ServerStream`; a stream to the upstream, `HTTP2UpstreamLeg`):
/// - inbound, frames that arrive while their reader does not read are held, and the stream's window
///   (`InboundFlowWindow`) is opened again only as they are handed on: a slow reader slows the sender;
/// - outbound, the bytes written and not yet handed to the socket: past `highWatermark` the stream is
///   not writable (its writer stops reading the other side) until they fall under `lowWatermark`.
public struct HTTP2StreamFlow {
    public static let highWatermark = 64 * 1024
    public static let lowWatermark = 32 * 1024

    private var window: InboundFlowWindow
    /// Frames held while the reader does not read: made for the first one, as most streams never hold one (an empty
    /// `CircularBuffer` allocates its storage, and so does emptying one).
    private var held: CircularBuffer<HTTP2Frame.FramePayload>?
    /// The reader asked for more: frames are handed on as they arrive, until the read ends.
    public private(set) var readRequested = true
    public private(set) var pendingBytes = 0
    public private(set) var pendingWrites = 0
    /// DATA bytes of held frames handed on since the window was last told of them.
    private var releasedBytes = 0

    public init(targetWindow: Int) {
        window = InboundFlowWindow(target: targetWindow)
    }

    public var hasHeldFrames: Bool { !(held?.isEmpty ?? true) }
    public var isUnderHighWatermark: Bool { pendingBytes < Self.highWatermark }

    // MARK: Inbound

    /// A frame arrived: handed back to be delivered now, or held (nil).
    public mutating func arrived(_ payload: HTTP2Frame.FramePayload) -> HTTP2Frame.FramePayload? {
        if readRequested && !hasHeldFrames { return payload }
        if case .data(let data) = payload { window.held(data.data.readableBytes) }
        if held == nil { held = CircularBuffer(initialCapacity: 4) }
        held?.append(payload)
        return nil
    }

    /// The next held frame to deliver, while the reader reads.
    public mutating func nextHeld() -> HTTP2Frame.FramePayload? {
        guard readRequested, let payload = held?.popFirst() else { return nil }
        if case .data(let data) = payload { releasedBytes += data.data.readableBytes }
        return payload
    }

    /// The held frames taken by `nextHeld()` were delivered: the window increment to send, if any.
    public mutating func heldFramesDelivered() -> Int? {
        let bytes = releasedBytes
        releasedBytes = 0
        return bytes > 0 ? window.released(bytes) : nil
    }

    /// NIO reported the stream's inbound window: the increment to send, if any.
    public mutating func windowChanged(to size: Int) -> Int? {
        window.windowChanged(to: size)
    }

    public mutating func requestRead() { readRequested = true }
    /// The read ended: frames are held until the reader asks again.
    public mutating func readEnded() { readRequested = false }
    public mutating func dropHeld() { held = nil }

    // MARK: Outbound

    public mutating func writing(_ bytes: Int) {
        pendingWrites += 1
        pendingBytes += bytes
    }

    /// A write reached the socket (or failed): whether the stream just became writable again.
    public mutating func wrote(_ bytes: Int) -> Bool {
        let wasWritable = isUnderHighWatermark
        pendingWrites -= 1
        pendingBytes -= bytes
        return !wasWritable && pendingBytes < Self.lowWatermark
    }
}
