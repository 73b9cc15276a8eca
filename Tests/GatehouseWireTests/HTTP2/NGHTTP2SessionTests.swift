import NIOCore
import NIOEmbedded
import Testing
import GatehouseHTTP

/// The nghttp2 session on its own, fed a client's bytes written here by hand (static-table HPACK): what it tells
/// its delegate, what it writes, and what it keeps.
struct NGHTTP2SessionTests {
    /// Records what the session reports.
    final class Recorder: NGHTTP2SessionDelegate {
        var fields: [(String, String)] = []
        var blocksEnded: [(Int32, Bool)] = []
        var data: [String] = []
        var closed: [Int32] = []
        var written = ByteBuffer()
        var sessionLastStreamTaken: Int32 = 0

        func sessionBeginsFrame(_ frame: NGHTTP2Session.FrameHeader) -> HTTP2ConnectionError? { nil }
        func sessionBeginsBlock(of stream: Int32, opensStream: Bool) {}
        func sessionEndedBlock(of stream: Int32, fields: consuming HTTP2FieldList, endStream: Bool) -> HTTP2ConnectionError? {
            self.fields += fields
            blocksEnded.append((stream, endStream))
            sessionLastStreamTaken = stream
            return nil
        }
        func sessionReceivedData(of stream: Int32, _ bytes: ByteBuffer) { data.append(String(buffer: bytes)) }
        func sessionEndedData(of stream: Int32, payloadBytes: Int, endStream: Bool) -> HTTP2ConnectionError? { nil }
        func sessionRefusedFrame(of stream: Int32) -> HTTP2ConnectionError? { nil }
        func sessionClosed(stream: Int32, errorCode: UInt32) { closed.append(stream) }
        func sessionSentEnd(of stream: Int32) {}
        func sessionWrite(_ bytes: ByteBuffer, completion: HTTP2WriteCompletion) {
            var bytes = bytes
            written.writeBuffer(&bytes)
            if case .promise(let promise) = completion { promise.succeed() }
        }
        func sessionFlush() {}
    }

    static func frame(_ type: UInt8, flags: UInt8, stream: UInt32, _ payload: [UInt8]) -> [UInt8] {
        let length = payload.count
        return [UInt8(length >> 16), UInt8(length >> 8 & 0xff), UInt8(length & 0xff), type, flags,
                UInt8(stream >> 24), UInt8(stream >> 16 & 0xff), UInt8(stream >> 8 & 0xff), UInt8(stream & 0xff)] + payload
    }

    /// GET / over http, `:authority` a.test (a literal without indexing, name from the static table), then `x-n`.
    static func requestBlock(extra value: String) -> [UInt8] {
        [0x82, 0x86, 0x84, 0x01, 0x06] + Array("a.test".utf8) + [0x00, 0x03] + Array("x-n".utf8) + [UInt8(value.utf8.count)] + Array(value.utf8)
    }

    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8) + frame(0x4, flags: 0, stream: 0, [])

    static func session(_ recorder: Recorder) -> NGHTTP2Session {
        let session = NGHTTP2Session(
            server: true, delegate: recorder, eventLoop: EmbeddedEventLoop(), allocator: ByteBufferAllocator(), maxBufferedControlFrames: 100,
            headerListCeiling: 65536)
        session.submitSettings([], maxConcurrentStreams: 100)
        return session
    }

    /// The settings entries of the first frame written, which must be SETTINGS.
    static func firstSettings(_ written: ByteBuffer) -> [UInt16: UInt32] {
        var bytes = written
        guard let header = bytes.readBytes(length: 9), header[3] == 0x4 else { return [:] }
        let length = Int(header[0]) << 16 | Int(header[1]) << 8 | Int(header[2])
        var entries: [UInt16: UInt32] = [:]
        for _ in 0..<(length / 6) {
            if let id = bytes.readInteger(as: UInt16.self), let value = bytes.readInteger(as: UInt32.self) { entries[id] = value }
        }
        return entries
    }

    @Test func theFieldsOfABlockComeInOrderAndTheStreamLimitIsTheOneAdvertised() {
        let recorder = Recorder()
        let session = Self.session(recorder)
        let input = Self.preface + Self.frame(0x1, flags: 0x4 | 0x1, stream: 1, Self.requestBlock(extra: "1"))
        #expect(session.receive(ByteBuffer(bytes: input)) == nil)
        #expect(recorder.fields.map { "\($0.0)=\($0.1)" } == [":method=GET", ":scheme=http", ":path=/", ":authority=a.test", "x-n=1"])
        #expect(recorder.blocksEnded.map(\.0) == [1] && recorder.blocksEnded.map(\.1) == [true])
        session.send()
        #expect(Self.firstSettings(recorder.written)[0x3] == 100, "SETTINGS_MAX_CONCURRENT_STREAMS as advertised")
    }

    @Test func dataIsHandedOnAsItCame() {
        let recorder = Recorder()
        let session = Self.session(recorder)
        let input = Self.preface + Self.frame(0x1, flags: 0x4, stream: 1, Self.requestBlock(extra: "2"))
            + Self.frame(0x0, flags: 0x1, stream: 1, Array("hello".utf8))
        #expect(session.receive(ByteBuffer(bytes: input)) == nil)
        #expect(recorder.data == ["hello"])
    }

    /// A stream answered and ended both ways is dropped at once: nghttp2 1.52 would otherwise keep every closed stream
    /// of the connection for RFC 7540's priority tree (it is told no stream limit), memory without end.
    @Test func aClosedStreamIsNotKept() {
        let recorder = Recorder()
        let session = Self.session(recorder)
        #expect(session.receive(ByteBuffer(bytes: Self.preface + Self.frame(0x1, flags: 0x5, stream: 1, Self.requestBlock(extra: "3")))) == nil)
        session.submitResponse(1, [(":status", "204", true)], hasBody: false)
        session.send()
        #expect(recorder.closed == [1])
        #expect(!session.holds(stream: 1))
    }

    /// A GOAWAY for an error names the last stream the connection took, not the one whose block was the fault.
    @Test func anErrorGoAwayNamesTheLastStreamTaken() {
        let recorder = Recorder()
        let session = Self.session(recorder)
        #expect(session.receive(ByteBuffer(bytes: Self.preface + Self.frame(0x1, flags: 0x5, stream: 1, Self.requestBlock(extra: "4")))) == nil)
        session.send()
        recorder.written.clear()
        // Stream 3's block is undecodable (static-table index 0): nghttp2 ends the connection itself, naming stream 3.
        _ = session.receive(ByteBuffer(bytes: Self.frame(0x1, flags: 0x5, stream: 3, [0x80])))
        session.send()
        var written = recorder.written
        var lastStream: UInt32?
        while let header = written.readBytes(length: 9) {
            let length = Int(header[0]) << 16 | Int(header[1]) << 8 | Int(header[2])
            let payload = written.readBytes(length: length) ?? []
            if header[3] == 0x7, payload.count >= 8 {
                lastStream = UInt32(payload[0]) << 24 | UInt32(payload[1]) << 16 | UInt32(payload[2]) << 8 | UInt32(payload[3])
            }
        }
        #expect(lastStream == 1, "GOAWAY written: \(recorder.written.readableBytes) bytes")
        #expect(session.isDone)
    }
}
