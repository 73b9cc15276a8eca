import CNGHTTP2

/// nghttp2's C side of an `NGHTTP2Session`: the callback table every session shares (nghttp2 calls back into the
/// session its user data points at), the DATA provider's read callback, and fields as nghttp2's name-value array.
extension NGHTTP2Session {
    static let readData: nghttp2_data_source_read_callback = { _, stream, _, limit, flags, _, userData in
        withOwningSession(userData) { $0.nextData(of: stream, limit: limit, flags: flags!) }  // safe: nghttp2 always passes flags
    }

    /// The callbacks every session shares (nghttp2 copies them into the session).
    static let callbacks: CallbackTable = CallbackTable()

    final class CallbackTable: @unchecked Sendable {  // safe: made once, then only read by nghttp2
        let pointer: OpaquePointer?

        /// safe: the pointers unwrapped below (`frame!`, `header!`) are never NULL in nghttp2's calls of these
        /// callbacks (nghttp2_session.c passes its own inbound or outbound frame); what a peer sends decides their
        /// contents, never whether they exist. DATA, whose pointer could be empty, is guarded.
        init() {
            var callbacks: OpaquePointer?
            nghttp2_session_callbacks_new(&callbacks)
            nghttp2_session_callbacks_set_on_begin_frame_callback(callbacks) { _, header, userData in
                withOwningSession(userData) { $0.beginFrame(header!.pointee) }  // safe: see init
            }
            nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks) { _, frame, userData in
                withOwningSession(userData) { $0.beginHeaders(frame!) }  // safe: see init
            }
            nghttp2_session_callbacks_set_on_header_callback(callbacks) { _, _, name, nameLength, value, valueLength, _, userData in
                withOwningSession(userData) {
                    $0.header(name: UnsafeRawBufferPointer(start: name, count: nameLength), value: UnsafeRawBufferPointer(start: value, count: valueLength))
                }
            }
            nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, userData in
                withOwningSession(userData) { $0.frameReceived(frame!) }  // safe: see init
            }
            nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { _, _, stream, data, length, userData in
                guard let data, length > 0 else { return 0 }
                return withOwningSession(userData) { $0.dataChunk(of: stream, UnsafeRawPointer(data), count: length) }
            }
            nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(callbacks) { _, frame, _, userData in
                withOwningSession(userData) { $0.invalidFrame(of: frame!.pointee.hd.stream_id) }  // safe: see init
            }
            nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, stream, errorCode, userData in
                withOwningSession(userData) { $0.streamClosed(stream, errorCode: errorCode) }
            }
            nghttp2_session_callbacks_set_on_frame_send_callback(callbacks) { _, frame, userData in
                withOwningSession(userData) { $0.frameSent(frame!) }  // safe: see init
            }
            nghttp2_session_callbacks_set_send_data_callback(callbacks) { _, frame, header, length, _, userData in
                withOwningSession(userData) { $0.sendData(frame!, header: header!, length: length) }  // safe: see init
            }
            pointer = callbacks
        }
    }
}

/// Fields as nghttp2 takes them: its name-value array.
enum NGHTTP2NameValues {
    /// The fields as nghttp2's name-value array, valid inside `body` (nghttp2 copies what it keeps). Both arrays are
    /// temporary: on the stack while small (a response's usual head), on the heap otherwise. `then` and `last` follow
    /// `fields` in the array: parts a caller keeps apart (a connection's kept identity fields), not copied into one.
    static func with(
        _ fields: [NGHTTP2Session.OutboundField], then: [NGHTTP2Session.OutboundField] = [], last: [NGHTTP2Session.OutboundField] = [],
        _ body: (UnsafePointer<nghttp2_nv>, Int) -> Void
    ) {
        // Read through the arrays' buffers, borrowed: a `for field in fields` copies each field's two strings (a retain
        // and a release each, 45 a GET across its two heads).
        fields.withUnsafeBufferPointer { first in
            then.withUnsafeBufferPointer { second in
                last.withUnsafeBufferPointer { third in
                    let count = first.count + second.count + third.count
                    var byteCount = 0
                    for index in first.indices { byteCount += first[index].name.utf8.count + first[index].value.utf8.count }
                    for index in second.indices { byteCount += second[index].name.utf8.count + second[index].value.utf8.count }
                    for index in third.indices { byteCount += third[index].name.utf8.count + third[index].value.utf8.count }
                    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: max(byteCount, 1)) { storage in
                        withUnsafeTemporaryAllocation(of: nghttp2_nv.self, capacity: max(count, 1)) { nva in
                            let base = storage.baseAddress!  // safe: capacity at least 1
                            var offset = 0
                            var position = 0
                            func append(_ part: UnsafeBufferPointer<NGHTTP2Session.OutboundField>) {
                                for index in part.indices {
                                    let nameCount = UnsafeMutableBufferPointer(rebasing: storage[offset...]).initialize(fromContentsOf: part[index].name.utf8)
                                    let value = UnsafeMutableBufferPointer(rebasing: storage[(offset + nameCount)...])
                                    let valueCount = value.initialize(fromContentsOf: part[index].value.utf8)
                                    let flags = part[index].indexed ? NGHTTP2_NV_FLAG_NONE.rawValue : NGHTTP2_NV_FLAG_NO_INDEX.rawValue
                                    nva.initializeElement(
                                        at: position,
                                        to: nghttp2_nv(
                                            name: base + offset, value: base + offset + nameCount, namelen: nameCount, valuelen: valueCount,
                                            flags: UInt8(flags)))
                                    offset += nameCount + valueCount
                                    position += 1
                                }
                            }
                            append(first)
                            append(second)
                            append(third)
                            body(nva.baseAddress!, count)  // safe: capacity at least 1
                        }
                    }
                }
            }
        }
    }
}

/// `body` given the session a callback's user data points at (set to it when the session is made), borrowed: nghttp2
/// calls back only while the session is calling it (receiving, sending), so the session is alive and no reference is
/// counted for the call (issue 57: some thirty callbacks a request, a retain and a release each when taken as owned).
@inline(__always)
private func withOwningSession<Result>(_ userData: UnsafeMutableRawPointer?, _ body: (NGHTTP2Session) -> Result) -> Result {
    Unmanaged<NGHTTP2Session>.fromOpaque(userData!)._withUnsafeGuaranteedRef(body)  // safe: set at creation, never nil
}
