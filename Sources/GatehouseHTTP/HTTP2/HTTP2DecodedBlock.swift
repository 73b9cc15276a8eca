/// The header block nghttp2 is decoding (a HEADERS frame and its CONTINUATIONs): its fields kept as they come, handed on
/// whole when it ends, one call into the connection per block rather than one per field (issue 57: each call retained
/// the connection and looked its stream up, some fifty references a gRPC call).
///
/// Fields are counted as RFC 7541 §4.1 does (32 bytes more per field). Past the ceiling nothing more is kept, and the
/// block ends the connection when it ends (COMPRESSION_ERROR: an HPACK bomb), the verdict of a decoder that reads the
/// whole block before decoding it (NIO's), unless its encoded size outgrows the ceiling first (`HTTP2FloodDefence`).
public struct HTTP2DecodedBlock {
    private let ceiling: Int
    private var fields: HTTP2FieldList = []
    private var decodedBytes = 0

    /// `ceiling`: what one block may decode to (SETTINGS_MAX_HEADER_LIST_SIZE).
    public init(ceiling: Int) {
        self.ceiling = ceiling
    }

    /// A block begins: nothing of the last one is kept.
    public mutating func begin() {
        fields = []
        decodedBytes = 0
    }

    public mutating func decoded(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        decodedBytes += name.count + value.count + 32
        guard decodedBytes <= ceiling else { return }
        if fields.isEmpty { fields.reserveCapacity(16) }  // one allocation for a usual block, not one per doubling
        fields.append((String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
    }

    /// The block ended: its fields, the one reference to them (the reader takes their strings), or the connection
    /// error a block decoded past the ceiling earns.
    public mutating func end() throws(HTTP2ConnectionError) -> HTTP2FieldList {
        var taken: HTTP2FieldList = []
        swap(&taken, &fields)
        guard decodedBytes <= ceiling else {
            throw HTTP2ConnectionError(code: HTTP2ConnectionError.compressionError, lastStream: nil)
        }
        return taken
    }
}
