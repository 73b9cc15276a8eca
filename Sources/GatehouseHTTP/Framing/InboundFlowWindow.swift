/// The receiving side of one HTTP/2 flow-control window (a stream's or the connection's): when to
/// send WINDOW_UPDATE, and for how much. Bytes count as consumed once handed on; bytes held back
/// (the upstream cannot take them yet) keep the window closed, which is the backpressure a slow
/// upstream puts on the client (RFC 9113 §5.2). The rule is swift-nio-http2's `InboundWindowManager`:
/// top the window up to its target once it has fallen to half of it.
public struct InboundFlowWindow {
    private let target: Int
    /// The window as NIO last reported it (`NIOHTTP2WindowUpdatedEvent.inboundWindowSize`).
    private var lastSize: Int?
    /// Bytes received but not handed on yet.
    public private(set) var heldBytes = 0

    public init(target: Int) {
        self.target = target
    }

    /// NIO reports the window after a DATA frame or a WINDOW_UPDATE: the increment to send, if any.
    public mutating func windowChanged(to size: Int) -> Int? {
        lastSize = size
        return increment()
    }

    public mutating func held(_ bytes: Int) {
        heldBytes += bytes
    }

    /// Held bytes handed on: the increment to send, if any.
    public mutating func released(_ bytes: Int) -> Int? {
        heldBytes -= bytes
        return increment()
    }

    private func increment() -> Int? {
        guard let lastSize else { return nil }
        // What the peer may still send, not counting what we hold: a window short of half its target is topped up.
        let available = lastSize + heldBytes
        if available >= target { return nil }
        if available < 0 { return min(-available + target, Int(Int32.max)) }
        let increment = target - available
        return increment >= available ? increment : nil
    }
}
