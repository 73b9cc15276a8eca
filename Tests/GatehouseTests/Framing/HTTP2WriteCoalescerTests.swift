@testable import Gatehouse
import NIOCore
import NIOEmbedded
import Testing
import GatehouseHTTP
import GatehouseProxy

/// What NIO's HTTP/2 handler writes between two flushes leaves as one buffer, in order; what must not be copied
/// or waited on passes as it is, after what was gathered before it.
struct HTTP2WriteCoalescerTests {
    private func channel() throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(HTTP2WriteCoalescer())
        return channel
    }

    private func buffer(_ text: String) -> ByteBuffer { ByteBuffer(string: text) }

    private func written(_ channel: EmbeddedChannel) throws -> [String] {
        var out: [String] = []
        while let data = try channel.readOutbound(as: IOData.self) {
            guard case .byteBuffer(let buffer) = data else { out.append("<file>"); continue }
            out.append(String(buffer: buffer))
        }
        return out
    }

    @Test func framesWrittenBetweenFlushesLeaveAsOneBuffer() throws {
        let channel = try channel()
        channel.write(IOData.byteBuffer(buffer("HEADERS")), promise: nil)
        channel.write(IOData.byteBuffer(buffer("DATA")), promise: nil)
        channel.write(IOData.byteBuffer(buffer("TRAILERS")), promise: nil)
        #expect(try written(channel).isEmpty, "nothing before the flush")
        channel.flush()
        #expect(try written(channel) == ["HEADERSDATATRAILERS"])
        channel.write(IOData.byteBuffer(buffer("NEXT")), promise: nil)
        channel.flush()
        #expect(try written(channel) == ["NEXT"])
        _ = try channel.finish()
    }

    @Test func aWriteWithAPromiseOrALargeBufferPassesAfterWhatWasGathered() throws {
        let channel = try channel()
        let large = String(repeating: "x", count: HTTP2WriteCoalescer.largestCopied + 1)
        channel.write(IOData.byteBuffer(buffer("a")), promise: nil)
        let promise = channel.eventLoop.makePromise(of: Void.self)
        channel.write(IOData.byteBuffer(buffer("b")), promise: promise)
        channel.write(IOData.byteBuffer(buffer("c")), promise: nil)
        channel.write(IOData.byteBuffer(buffer(large)), promise: nil)
        channel.write(IOData.byteBuffer(buffer("d")), promise: nil)
        channel.flush()
        #expect(try written(channel) == ["a", "b", "c", large, "d"])
        _ = try channel.finish()
    }

    /// Counts the writes that reach it (EmbeddedChannel itself shows only what was flushed).
    private final class WriteRecorder: ChannelOutboundHandler {
        typealias OutboundIn = IOData
        var sizes: [Int] = []
        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            if case .byteBuffer(let buffer) = unwrapOutboundIn(data) { sizes.append(buffer.readableBytes) }
            context.write(data, promise: promise)
        }
    }

    @Test func gatheredBytesPassOnceThereAreEnoughWithoutAFlush() throws {
        let channel = EmbeddedChannel()
        let recorder = WriteRecorder()
        try channel.pipeline.syncOperations.addHandler(recorder)
        try channel.pipeline.syncOperations.addHandler(HTTP2WriteCoalescer())
        let piece = String(repeating: "y", count: 1024)
        for _ in 0..<(HTTP2WriteCoalescer.mostGathered / 1024) { channel.write(IOData.byteBuffer(buffer(piece)), promise: nil) }
        #expect(recorder.sizes == [HTTP2WriteCoalescer.mostGathered])
        channel.write(IOData.byteBuffer(buffer("z")), promise: nil)
        #expect(recorder.sizes.count == 1, "the next byte waits for the flush")
        channel.flush()
        #expect(recorder.sizes == [HTTP2WriteCoalescer.mostGathered, 1])
        _ = try channel.finish()
    }
}
