@testable import Gatehouse
import NIOCore
import NIOHTTP2
import Testing
import GatehouseHTTP

/// One stream's inbound holding: frames pass while the reader reads, are held in order while it does not, and the
/// stream's window opens again only as the held DATA is handed on (the backpressure a slow reader puts on its sender).
struct HTTP2StreamFlowTests {
    static func data(_ count: Int) -> HTTP2Frame.FramePayload {
        .data(.init(data: .byteBuffer(ByteBuffer(repeating: 0x61, count: count))))
    }

    static func size(_ payload: HTTP2Frame.FramePayload?) -> Int? {
        guard case .data(let data) = payload, case .byteBuffer(let buffer) = data.data else { return nil }
        return buffer.readableBytes
    }

    @Test func framesPassWhileTheReaderReadsAndAreHeldInOrderWhileItDoesNot() {
        var flow = HTTP2StreamFlow<HTTP2Frame.FramePayload>(targetWindow: 1000)
        #expect(Self.size(flow.arrived(Self.data(10))) == 10 && !flow.hasHeldFrames)
        flow.readEnded()
        #expect(flow.arrived(Self.data(1)) == nil && flow.arrived(Self.data(2)) == nil && flow.hasHeldFrames)
        #expect(flow.nextHeld() == nil, "nothing is handed on before the reader asks")
        flow.requestRead()
        #expect(flow.arrived(Self.data(3)) == nil, "behind held frames, a frame waits its turn")
        #expect(Self.size(flow.nextHeld()) == 1 && Self.size(flow.nextHeld()) == 2 && Self.size(flow.nextHeld()) == 3)
        #expect(flow.nextHeld() == nil && !flow.hasHeldFrames)
        #expect(Self.size(flow.arrived(Self.data(4))) == 4, "nothing held: frames pass again")
    }

    @Test func theWindowOpensOnlyAsHeldDataIsHandedOn() {
        var flow = HTTP2StreamFlow<HTTP2Frame.FramePayload>(targetWindow: 1000)
        flow.readEnded()
        #expect(flow.arrived(Self.data(600)) == nil)
        #expect(flow.windowChanged(to: 400) == nil, "600 bytes held still count as sent: the window is not topped up")
        flow.requestRead()
        #expect(Self.size(flow.nextHeld()) == 600)
        #expect(flow.heldFramesDelivered() == 600, "handed on: topped up to the target")
        #expect(flow.heldFramesDelivered() == nil)
    }

    @Test func droppedFramesAreGoneAndTheFlowHoldsAgainAfterwards() {
        var flow = HTTP2StreamFlow<HTTP2Frame.FramePayload>(targetWindow: 1000)
        flow.readEnded()
        _ = flow.arrived(Self.data(5))
        flow.dropHeld()
        #expect(!flow.hasHeldFrames)
        flow.requestRead()
        #expect(flow.nextHeld() == nil)
        flow.readEnded()
        #expect(flow.arrived(Self.data(6)) == nil && flow.hasHeldFrames)
        flow.requestRead()
        #expect(Self.size(flow.nextHeld()) == 6)
    }
}
