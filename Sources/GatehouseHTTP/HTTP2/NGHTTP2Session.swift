import CNGHTTP2
public import NIOCore

/// One HTTP/2 connection's codec: nghttp2 (Debian's libnghttp2) reads the bytes given to `receive` and serializes
/// what is submitted into `send`, telling its delegate what came and asking it for DATA. HTTP messaging is off
/// (Gatehouse reads each header block by its own rules, in one place), and so is nghttp2's window update:
/// the connection says what was consumed (`consume`), so a stream whose reader does not read stays closed.
public final class NGHTTP2Session {
    public struct FrameHeader {
        public var length: Int
        public var stream: Int32
        public var type: UInt8
        public var flags: UInt8

        public init(length: Int, stream: Int32, type: UInt8, flags: UInt8) {
            self.length = length
            self.stream = stream
            self.type = type
            self.flags = flags
        }

        public static let data: UInt8 = 0x0
        public static let headers: UInt8 = 0x1
        public static let priority: UInt8 = 0x2
        public static let rstStream: UInt8 = 0x3
        public static let settings: UInt8 = 0x4
        public static let ping: UInt8 = 0x6
        public static let goAway: UInt8 = 0x7
        public static let continuation: UInt8 = 0x9
        public static let endStream: UInt8 = 0x1
        public static let endHeaders: UInt8 = 0x4
        public static let ack: UInt8 = 0x1

        public var endsStream: Bool { flags & Self.endStream != 0 && (type == Self.data || type == Self.headers) }
    }

    /// SETTINGS identifiers (RFC 9113 §6.5.2).
    public enum Setting {
        public static let maxConcurrentStreams: Int32 = 0x3
        public static let maxHeaderListSize: Int32 = 0x6
        public static let enablePush: Int32 = 0x2
    }

    public enum DataTurn {
        /// Nothing queued yet: asked again once `resumeData` is called.
        case deferred
        case send(Int, endsBody: Bool, trailers: HTTP2FieldList?)
    }

    /// A field to send: name, value, and whether it stays out of the HPACK table (new on every answer).
    public typealias OutboundField = (name: String, value: String, indexed: Bool)

    private var session: OpaquePointer?
    /// The connection that owns this session; not retained (it is read on every frame). Safe: the connection calls
    /// `receive` and `send` itself, and detaches the session when it leaves (`detach`), so the one call that may come
    /// later, a scheduled send, finds it detached.
    private unowned(unsafe) let delegate: any NGHTTP2SessionDelegate
    private let allocator: ByteBufferAllocator
    private var block: HTTP2DecodedBlock  // the header block being decoded
    /// The input being read: DATA inside it is sliced, not copied.
    private var input: (base: UnsafeRawPointer, count: Int, buffer: ByteBuffer)?
    private var output: ByteBuffer?
    /// What a callback asked to end the session with.
    private var failure: HTTP2ConnectionError?
    private var advertisedMaxConcurrentStreams: UInt32?
    /// Each stream's body waiting for its DATA frames (a stream whose head said a body follows).
    private var outbound: [Int32: HTTP2OutboundQueue] = [:]
    private let eventLoop: any EventLoop
    /// Inside `receive` (sends wait for the read's end), and a send asked for that has not happened yet.
    private var isReading = false
    private var sendPending = false
    /// The delegate is gone (`detach`): a send scheduled before must not reach it.
    private var isDetached = false

    public init(
        server: Bool, delegate: any NGHTTP2SessionDelegate, eventLoop: any EventLoop, allocator: ByteBufferAllocator,
        maxBufferedControlFrames: Int, headerListCeiling: Int
    ) {
        self.delegate = delegate
        self.block = HTTP2DecodedBlock(ceiling: headerListCeiling)
        self.eventLoop = eventLoop
        self.allocator = allocator
        var option: OpaquePointer?
        nghttp2_option_new(&option)
        defer { nghttp2_option_del(option) }
        nghttp2_option_set_no_auto_window_update(option, 1)
        nghttp2_option_set_no_http_messaging(option, 1)
        nghttp2_option_set_max_outbound_ack(option, maxBufferedControlFrames)
        // Closed streams are dropped at once: nghttp2 1.52 would keep them for RFC 7540's priority tree, up to the
        // local stream limit, which it is not told (`submitSettings`): without this, every stream a connection
        // ever had, and malloc slows with them (bench/RESULTS.md, issue 46).
        nghttp2_option_set_no_closed_streams(option, 1)
        let callbacks = Self.callbacks
        let userData = Unmanaged.passUnretained(self).toOpaque()
        if server {
            nghttp2_session_server_new2(&session, callbacks.pointer, userData, option)
        } else {
            nghttp2_session_client_new2(&session, callbacks.pointer, userData, option)
        }
    }

    deinit {
        nghttp2_session_del(session)
    }

    // MARK: - In

    /// Reads `buffer`; returns the connection error the session ends with, if it must (GOAWAY submitted).
    public func receive(_ buffer: ByteBuffer) -> HTTP2ConnectionError? {
        isReading = true
        let result = buffer.withUnsafeReadableBytes { bytes -> Int in
            guard let base = bytes.baseAddress else { return 0 }
            input = (base, bytes.count, buffer)
            defer { input = nil }
            return nghttp2_session_mem_recv(session, base.assumingMemoryBound(to: UInt8.self), bytes.count)
        }
        guard result < 0 else { return nil }
        let error = failure ?? Self.connectionError(forReceiveResult: result)
        failure = nil
        terminate(error)
        return error
    }

    private static func connectionError(forReceiveResult result: Int) -> HTTP2ConnectionError {
        switch Int32(result) {
        case NGHTTP2_ERR_FLOODED.rawValue, NGHTTP2_ERR_TOO_MANY_CONTINUATIONS.rawValue:
            HTTP2ConnectionError(code: HTTP2ConnectionError.enhanceYourCalm, lastStream: 0)
        case NGHTTP2_ERR_HEADER_COMP.rawValue:
            HTTP2ConnectionError(code: HTTP2ConnectionError.compressionError, lastStream: nil)
        default:
            HTTP2ConnectionError(code: HTTP2ConnectionError.protocolError, lastStream: nil)
        }
    }

    /// GOAWAY with the error; the session then wants nothing more (`isDone` once it is sent).
    public func terminate(_ error: HTTP2ConnectionError) {
        let last = error.lastStream ?? delegate.sessionLastStreamTaken
        nghttp2_session_terminate_session2(session, last, error.code)
    }

    /// The stream's bytes were handed on: its window (and the connection's) may open again.
    public func consume(_ stream: Int32, bytes: Int) {
        nghttp2_session_consume_stream(session, stream, bytes)
    }

    // MARK: - Out

    /// The first SETTINGS. `maxConcurrentStreams` is told the peer but not nghttp2: nghttp2 makes a stream past the
    /// acknowledged limit a connection error (GOAWAY, the connection closed as soon as it is sent, the streams in
    /// flight lost with it) where RFC 9113 §5.1.2 asks for a stream error. So nghttp2 is given no limit, the one the
    /// peer is told is written into the SETTINGS frame on its way out, and the connection refuses the streams past
    /// it itself (REFUSED_STREAM, `submitReset`).
    public func submitSettings(_ settings: [(id: Int32, value: UInt32)], maxConcurrentStreams: UInt32?) {
        var entries = settings.map { nghttp2_settings_entry(settings_id: $0.id, value: $0.value) }
        if let maxConcurrentStreams {
            entries.append(nghttp2_settings_entry(settings_id: Setting.maxConcurrentStreams, value: Self.unlimitedStreams))
            advertisedMaxConcurrentStreams = maxConcurrentStreams
        }
        nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &entries, entries.count)
    }

    private static let unlimitedStreams = UInt32.max

    /// The first SETTINGS frame's stream limit, as the peer is to read it (`submitSettings`).
    private func advertiseStreamLimit(in bytes: inout ByteBuffer) {
        guard let limit = advertisedMaxConcurrentStreams else { return }
        advertisedMaxConcurrentStreams = nil
        let start = bytes.readerIndex
        guard let length = bytes.getInteger(at: start, as: UInt32.self).map({ Int($0 >> 8) }),
              bytes.getInteger(at: start + 3, as: UInt8.self) == FrameHeader.settings else { return }
        var entry = start + 9
        while entry + 6 <= start + 9 + length {
            if bytes.getInteger(at: entry, as: UInt16.self) == UInt16(Setting.maxConcurrentStreams),
               bytes.getInteger(at: entry + 2, as: UInt32.self) == Self.unlimitedStreams {
                bytes.setInteger(limit, at: entry + 2)
            }
            entry += 6
        }
    }

    /// A response head; with `hasBody`, DATA follows as the delegate queues it (`resumeData`).
    public func submitResponse(_ stream: Int32, _ fields: [OutboundField], hasBody: Bool) {
        if hasBody { outbound[stream] = HTTP2OutboundQueue() }
        NGHTTP2NameValues.with(fields) { nva, count in
            if hasBody {
                var provider = nghttp2_data_provider()
                provider.read_callback = Self.readData
                nghttp2_submit_response(session, stream, nva, count, &provider)
            } else {
                nghttp2_submit_response(session, stream, nva, count, nil)
            }
        }
    }

    /// A request (client side): its stream id, or nil when no stream may open (the session is ending). With
    /// `hasBody`, DATA follows as the delegate queues it (`resumeData`). Its fields are `fields`, then `then`, then
    /// `last`: parts the caller keeps apart, given in order without being copied into one list.
    public func submitRequest(
        _ fields: [OutboundField], then: [OutboundField] = [], last: [OutboundField] = [], hasBody: Bool
    ) -> Int32? {
        var stream: Int32 = -1
        NGHTTP2NameValues.with(fields, then: then, last: last) { nva, count in
            if hasBody {
                var provider = nghttp2_data_provider()
                provider.read_callback = Self.readData
                stream = nghttp2_submit_request(session, nil, nva, count, &provider, nil)
            } else {
                stream = nghttp2_submit_request(session, nil, nva, count, nil, nil)
            }
        }
        guard stream > 0 else { return nil }
        if hasBody { outbound[stream] = HTTP2OutboundQueue() }
        return stream
    }

    /// The peer's SETTINGS_MAX_CONCURRENT_STREAMS (100 until its SETTINGS come, nghttp2's default).
    public var peerMaxConcurrentStreams: Int {
        Int(nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS))
    }

    /// The id the next request would get (client side).
    public var nextStreamID: Int32 {
        Int32(truncatingIfNeeded: nghttp2_session_get_next_stream_id(session))
    }

    /// Body bytes of `stream`, after its head (`hasBody`); `completion` is done once they are handed to the socket.
    public func queue(_ stream: Int32, _ bytes: ByteBuffer, completion: HTTP2WriteCompletion) {
        guard outbound[stream]?.ended == false else {
            completion.fail()
            return
        }
        outbound[stream]?.append(bytes, completion: completion)
        nghttp2_session_resume_data(session, stream)
    }

    /// The body of `stream` ends after what is queued, with `trailers` if any.
    public func endBody(_ stream: Int32, trailers: HTTP2FieldList?) {
        guard outbound[stream]?.ended == false else { return }
        outbound[stream]?.end(trailers: trailers)
        nghttp2_session_resume_data(session, stream)
    }

    /// The connection is gone: what the streams queued will not be written.
    public func dropQueuedBodies() {
        let queues = outbound
        outbound.removeAll()
        for queue in queues.values { queue.fail() }
    }

    public func submitReset(_ stream: Int32, code: UInt32) {
        nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream, code)
    }

    /// The first GOAWAY of a graceful close: no stream is refused yet (last stream 2^31-1).
    public func submitShutdownNotice() {
        nghttp2_submit_shutdown_notice(session)
    }

    /// The GOAWAY that names the last stream processed: the session ends once the streams before it are done.
    public func submitGoAway() {
        nghttp2_submit_goaway(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nghttp2_session_get_last_proc_stream_id(session), 0, nil, 0)
    }

    public func submitPing(_ payload: UInt64) {
        var opaque = payload.bigEndian
        _ = withUnsafeBytes(of: &opaque) { nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), $0.baseAddress?.assumingMemoryBound(to: UInt8.self)) }
    }

    /// Sends at the end of the current read, or once at the end of this event-loop turn.
    public func sendSoon() {
        guard !sendPending, !isDetached else { return }
        sendPending = true
        guard !isReading else { return }
        eventLoop.assumeIsolated().execute {
            guard self.sendPending else { return }
            self.sendNow()
        }
    }

    /// The connection's read is over: what it made the streams send goes out, in one write and one flush.
    public func readEnded() {
        isReading = false
        sendNow()
    }

    /// The delegate leaves (its handler left the pipeline): nothing is sent or reported to it any more. The delegate
    /// is not retained (a callback per frame would pay for it), so a send scheduled before must find it gone.
    public func detach() {
        isDetached = true
        sendPending = false
        dropQueuedBodies()
    }

    /// Everything submitted goes out now, then the delegate flushes.
    public func sendNow() {
        guard !isDetached else { return }
        sendPending = false
        send()
        delegate.sessionFlush()
    }

    /// Serializes everything submitted and flow control lets out, through `sessionWrite`, DATA payloads as slices
    /// of the queued buffers.
    public func send() {
        while true {
            var bytes: UnsafePointer<UInt8>?
            let count = nghttp2_session_mem_send(session, &bytes)
            guard count > 0, let bytes else { break }
            if output == nil { output = allocator.buffer(capacity: max(count, 512)) }
            output?.writeBytes(UnsafeRawBufferPointer(start: bytes, count: count))
        }
        writeOutput()
    }

    private func writeOutput() {
        guard var bytes = output else { return }
        output = nil
        advertiseStreamLimit(in: &bytes)
        nameLastStreamTaken(in: &bytes)
        delegate.sessionWrite(bytes, completion: .none)
    }

    /// A GOAWAY names the last stream nghttp2 began to read, though its header block may have been the fault that
    /// ends the connection: the peer may retry the streams after the last one the connection took (RFC 9113 §6.8),
    /// so that is the one named. The first GOAWAY of a graceful close (2^31-1, `submitShutdownNotice`) stays.
    private func nameLastStreamTaken(in bytes: inout ByteBuffer) {
        // Only when nghttp2 has begun a stream the connection did not take could a GOAWAY name too much.
        guard nghttp2_session_get_last_proc_stream_id(session) > delegate.sessionLastStreamTaken else { return }
        var frame = bytes.readerIndex
        while let word = bytes.getInteger(at: frame, as: UInt32.self) {
            let length = Int(word >> 8)
            if bytes.getInteger(at: frame + 3, as: UInt8.self) == FrameHeader.goAway,
               let named = bytes.getInteger(at: frame + 9, as: UInt32.self).map({ Int32(bitPattern: $0 & 0x7fff_ffff) }),
               named != Int32.max, named > delegate.sessionLastStreamTaken {
                bytes.setInteger(UInt32(delegate.sessionLastStreamTaken), at: frame + 9)
            }
            frame += 9 + length
        }
    }

    /// Whether nghttp2 still holds the stream (open, or kept after it closed).
    public func holds(stream: Int32) -> Bool {
        nghttp2_session_find_stream(session, stream) != nil
    }

    /// Nothing more to read or write: every stream is done after a GOAWAY, or the session failed.
    public var isDone: Bool {
        nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0
    }

    // MARK: - Callbacks

    func beginFrame(_ header: nghttp2_frame_hd) -> Int32 {
        let frame = FrameHeader(length: header.length, stream: header.stream_id, type: header.type, flags: header.flags)
        return fail(delegate.sessionBeginsFrame(frame))
    }

    private func fail(_ error: HTTP2ConnectionError?) -> Int32 {
        guard let error else { return 0 }
        failure = error
        return NGHTTP2_ERR_CALLBACK_FAILURE.rawValue
    }

    func beginHeaders(_ frame: UnsafePointer<nghttp2_frame>) -> Int32 {
        let category = frame.pointee.headers.cat
        block.begin()
        delegate.sessionBeginsBlock(of: frame.pointee.hd.stream_id, opensStream: category == NGHTTP2_HCAT_REQUEST || category == NGHTTP2_HCAT_RESPONSE)
        return 0
    }

    func header(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) -> Int32 {
        block.decoded(name: name, value: value)
        return 0
    }

    func frameReceived(_ frame: UnsafePointer<nghttp2_frame>) -> Int32 {
        let header = frame.pointee.hd
        let endStream = header.flags & FrameHeader.endStream != 0
        switch header.type {
        case FrameHeader.headers:
            let fields: HTTP2FieldList
            do { fields = try block.end() } catch { return fail(error) }
            return fail(delegate.sessionEndedBlock(of: header.stream_id, fields: consume fields, endStream: endStream))
        case FrameHeader.data:
            let payload = header.length - frame.pointee.data.padlen
            return fail(delegate.sessionEndedData(of: header.stream_id, payloadBytes: payload, endStream: endStream))
        default:
            break
        }
        return 0
    }

    func dataChunk(of stream: Int32, _ start: UnsafeRawPointer, count: Int) -> Int32 {
        nghttp2_session_consume_connection(session, count)
        var chunk: ByteBuffer
        if let input, start >= input.base, start + count <= input.base + input.count {
            chunk = input.buffer.getSlice(at: input.buffer.readerIndex + (start - input.base), length: count)!  // safe: inside the input, just checked
        } else {
            chunk = allocator.buffer(capacity: count)
            chunk.writeBytes(UnsafeRawBufferPointer(start: start, count: count))
        }
        delegate.sessionReceivedData(of: stream, chunk)
        return 0
    }

    func invalidFrame(of stream: Int32) -> Int32 {
        fail(delegate.sessionRefusedFrame(of: stream))
    }

    func streamClosed(_ stream: Int32, errorCode: UInt32) -> Int32 {
        if let queue = outbound.removeValue(forKey: stream) { queue.fail() }
        delegate.sessionClosed(stream: stream, errorCode: errorCode)
        return 0
    }

    func frameSent(_ frame: UnsafePointer<nghttp2_frame>) -> Int32 {
        let header = frame.pointee.hd
        let frameHeader = FrameHeader(length: header.length, stream: header.stream_id, type: header.type, flags: header.flags)
        if frameHeader.endsStream { delegate.sessionSentEnd(of: header.stream_id) }
        return 0
    }

    func nextData(of stream: Int32, limit: Int, flags: UnsafeMutablePointer<UInt32>) -> Int {
        switch outbound[stream]?.nextTurn(limit: limit) ?? .send(0, endsBody: true, trailers: nil) {
        case .deferred:
            return Int(NGHTTP2_ERR_DEFERRED.rawValue)
        case .send(let count, let endsBody, let trailers):
            flags.pointee |= NGHTTP2_DATA_FLAG_NO_COPY.rawValue
            if endsBody {
                flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
                if let trailers {
                    flags.pointee |= NGHTTP2_DATA_FLAG_NO_END_STREAM.rawValue
                    NGHTTP2NameValues.with(trailers.map { ($0.0, $0.1, true) }) { nva, count in
                        _ = nghttp2_submit_trailer(session, stream, nva, count)
                    }
                }
            }
            return count
        }
    }

    func sendData(_ frame: UnsafeMutablePointer<nghttp2_frame>, header: UnsafePointer<UInt8>, length: Int) -> Int32 {
        if output == nil { output = allocator.buffer(capacity: 9) }
        output?.writeBytes(UnsafeRawBufferPointer(start: header, count: 9))
        writeOutput()
        outbound[frame.pointee.hd.stream_id]?.take(length) { delegate.sessionWrite($0, completion: $1) }
        return 0
    }
}
