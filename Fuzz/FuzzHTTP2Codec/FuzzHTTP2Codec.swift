// libFuzzer target for the HTTP/2 codec as the client port runs it (Fuzz/README.md): a server NGHTTP2Session fed a
// client's bytes after the connection preface, with Gatehouse's flood rules (HTTP2FloodDefence) judging every frame
// and the session's HTTP2DecodedBlock every decoded field, each completed header block read by HTTP2RequestHeadReader (a head, then trailers), DATA
// held against the head's content-length (HTTP2DeclaredLength), and every stream whose request ended answered (a
// head, a body when the first byte's flag bit says so, trailers) so that the send side runs too.
//
// Input: the selector byte (how the bytes are cut into reads, FuzzSupport.SplitPattern), then frames. Besides "no
// crash, no hang, no leak", it checks:
// - a connection error from the session or the flood rules ends the session: once sent, it wants nothing more;
// - nothing of a block is handed on past the header-list ceiling;
// - DATA is only ever reported for a stream whose head came.
@testable import Gatehouse
import FuzzSupport
import NIOCore
import NIOEmbedded
import GatehouseHTTP

public func fuzzHTTP2Codec(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    var split = SplitPattern(input.first ?? 0)
    let connection = FuzzedHTTP2Connection(answersWithBody: split.flag)
    let session = NGHTTP2Session(
        server: true, delegate: connection, eventLoop: EmbeddedEventLoop(), allocator: ByteBufferAllocator(), maxBufferedControlFrames: 10_000,
        headerListCeiling: FuzzedHTTP2Connection.ceiling)
    connection.session = session
    session.submitSettings([(NGHTTP2Session.Setting.maxHeaderListSize, UInt32(FuzzedHTTP2Connection.ceiling))], maxConcurrentStreams: 100)
    var bytes = ByteBuffer(bytes: Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8) + input.dropFirst())
    var ended = false
    while bytes.readableBytes > 0 && !ended {
        let chunk = bytes.readSlice(length: split.isWhole ? bytes.readableBytes : min(bytes.readableBytes, split.nextReadSize(remaining: bytes.readableBytes)))!
        if let error = session.receive(chunk) {
            if printOutcome { print("connection error \(error)") }
            ended = true
        }
        connection.answerEndedStreams()
        session.send()
    }
    if ended { require(session.isDone, "a connection error, sent, and the session still wants to go on") }
    connection.session = nil
    return 0
}

/// The client port's connection in miniature: the rules and readers Gatehouse puts around the codec, no exchange.
final class FuzzedHTTP2Connection: NGHTTP2SessionDelegate {
    static let ceiling = 65536
    weak var session: NGHTTP2Session?
    let answersWithBody: Bool
    var defence = HTTP2FloodDefence(headerListCeiling: ceiling)
    var heads: [Int32: HTTP2DeclaredLength] = [:]
    var ended: [Int32] = []
    var answered: Set<Int32> = []
    var sessionLastStreamTaken: Int32 = 0

    init(answersWithBody: Bool) {
        self.answersWithBody = answersWithBody
    }

    func answerEndedStreams() {
        for stream in ended where !answered.contains(stream) {
            answered.insert(stream)
            session?.submitResponse(stream, [(":status", "200", true), ("x-request-id", "fuzz", false)], hasBody: true)
            if answersWithBody { session?.queue(stream, ByteBuffer(string: "ok\n"), completion: .none) }
            session?.endBody(stream, trailers: [("grpc-status", "0")])
        }
        ended.removeAll()
    }

    func sessionBeginsFrame(_ frame: NGHTTP2Session.FrameHeader) -> HTTP2ConnectionError? {
        defence.frameBegins(frame, now: .now())
    }

    func sessionBeginsBlock(of stream: Int32, opensStream: Bool) {}

    func sessionEndedBlock(of stream: Int32, fields: consuming HTTP2FieldList, endStream: Bool) -> HTTP2ConnectionError? {
        let keptBytes = fields.reduce(0) { $0 + $1.0.utf8.count + $1.1.utf8.count + 32 }
        require(keptBytes <= Self.ceiling, "a block handed on past the header-list ceiling")
        sessionLastStreamTaken = max(sessionLastStreamTaken, stream)
        if heads[stream] == nil {
            switch HTTP2RequestHeadReader.read(fields: fields, endStream: endStream, maxHeaderBytes: 16384) {
            case .success(let read):
                heads[stream] = HTTP2DeclaredLength(declared: read.contentLength)
                if printOutcome { print("stream \(stream): \(read.head)") }
            case .failure(let malformed):
                heads[stream] = HTTP2DeclaredLength(declared: nil)
                if printOutcome { print("stream \(stream): \(malformed)") }
            }
        } else {
            _ = HTTP2RequestHeadReader.readTrailers(fields: fields, maxBytes: 16384)
        }
        if endStream { ended.append(stream) }
        return nil
    }

    func sessionReceivedData(of stream: Int32, _ bytes: ByteBuffer) {
        require(heads[stream] != nil, "DATA for a stream whose head never came")
        if heads[stream]?.received(bytes.readableBytes, endStream: false) == false, printOutcome { print("stream \(stream): over its length") }
        session?.consume(stream, bytes: bytes.readableBytes)
    }

    func sessionEndedData(of stream: Int32, payloadBytes: Int, endStream: Bool) -> HTTP2ConnectionError? {
        if let refused = defence.dataFrameEnded(payloadBytes: payloadBytes, endStream: endStream) { return refused }
        if endStream { ended.append(stream) }
        return nil
    }

    func sessionRefusedFrame(of stream: Int32) -> HTTP2ConnectionError? {
        defence.streamError(now: .now())
    }

    func sessionClosed(stream: Int32, errorCode: UInt32) {
        heads[stream] = nil
    }

    func sessionSentEnd(of stream: Int32) {}

    func sessionWrite(_ bytes: ByteBuffer, completion: HTTP2WriteCompletion) {
        if case .promise(let promise) = completion { promise.succeed() }
    }

    func sessionFlush() {}
}
