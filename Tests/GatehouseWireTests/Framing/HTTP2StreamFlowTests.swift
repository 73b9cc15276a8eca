import NIOCore
import Testing
import GatehouseHTTP

/// One stream's inbound holding: parts pass while the reader reads and are held in order while it does not (the
/// stream's window opens only as DATA is handed on: the backpressure a slow reader puts on its sender).
struct HTTP2StreamFlowTests {
    static func data(_ count: Int) -> HTTP2StreamPart {
        .data(ByteBuffer(repeating: 0x61, count: count), endStream: false)
    }

    static func size(_ part: HTTP2StreamPart?) -> Int? {
        guard case .data(let buffer, _) = part else { return nil }
        return buffer.readableBytes
    }

    @Test func framesPassWhileTheReaderReadsAndAreHeldInOrderWhileItDoesNot() {
        var flow = HTTP2StreamFlow<HTTP2StreamPart>()
        #expect(Self.size(flow.arrived(Self.data(10))) == 10 && !flow.hasHeldFrames)
        flow.readEnded()
        #expect(Self.size(flow.arrived(Self.data(1))) == nil && Self.size(flow.arrived(Self.data(2))) == nil && flow.hasHeldFrames)
        #expect(Self.size(flow.nextHeld()) == nil, "nothing is handed on before the reader asks")
        flow.requestRead()
        #expect(Self.size(flow.arrived(Self.data(3))) == nil, "behind held frames, a frame waits its turn")
        #expect(Self.size(flow.nextHeld()) == 1 && Self.size(flow.nextHeld()) == 2 && Self.size(flow.nextHeld()) == 3)
        #expect(Self.size(flow.nextHeld()) == nil && !flow.hasHeldFrames)
        #expect(Self.size(flow.arrived(Self.data(4))) == 4, "nothing held: frames pass again")
    }

    @Test func droppedFramesAreGoneAndTheFlowHoldsAgainAfterwards() {
        var flow = HTTP2StreamFlow<HTTP2StreamPart>()
        flow.readEnded()
        _ = flow.arrived(Self.data(5))
        flow.dropHeld()
        #expect(!flow.hasHeldFrames)
        flow.requestRead()
        #expect(Self.size(flow.nextHeld()) == nil)
        flow.readEnded()
        #expect(Self.size(flow.arrived(Self.data(6))) == nil && flow.hasHeldFrames)
        flow.requestRead()
        #expect(Self.size(flow.nextHeld()) == 6)
    }
}
