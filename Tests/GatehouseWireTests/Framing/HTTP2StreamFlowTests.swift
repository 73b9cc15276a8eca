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

    /// Outbound: not writable from the write that reaches the high watermark until the bytes pending fall under the
    /// low one, and the edge told exactly once, whatever steps they fall by (a fall to between the watermarks, then
    /// under the low one, was never told: a request body over 64 KiB to an HTTP/2 upstream stalled until a timeout).
    @Test func writabilityComesBackOnceUnderTheLowWatermarkWhateverStepsTheBytesFallBy() {
        typealias Flow = HTTP2StreamFlow<HTTP2StreamPart>
        var flow = Flow()
        flow.writing(Flow.lowWatermark)
        flow.writing(Flow.lowWatermark - 1)
        #expect(flow.isWritable, "under the high watermark")
        flow.writing(2)
        #expect(!flow.isWritable, "over the high watermark")
        let betweenTheWatermarks = flow.wrote(2)
        #expect(!betweenTheWatermarks && !flow.isWritable, "under the high watermark, over the low one: still not writable")
        let atTheLow = flow.wrote(Flow.lowWatermark - 1)
        #expect(!atTheLow && !flow.isWritable, "at the low watermark: still not writable")
        let underTheLow = flow.wrote(Flow.lowWatermark)
        #expect(underTheLow && flow.isWritable, "under the low one: told")
        flow.writing(Flow.lowWatermark)
        let again = flow.wrote(Flow.lowWatermark)
        #expect(flow.isWritable && !again, "an edge is told once")
        #expect(flow.pendingBytes == 0 && flow.pendingWrites == 0)
    }
}
