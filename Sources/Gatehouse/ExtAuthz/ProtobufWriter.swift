/// Writes the protobuf wire format for the messages Gatehouse sends (`CheckResponse`, the health check's answer,
/// OTLP's `ExportTraceServiceRequest`): fields in number order, nested messages length-prefixed.
struct ProtobufWriter {
    private(set) var bytes: [UInt8] = []

    init(reservingCapacity capacity: Int = 256) {
        bytes.reserveCapacity(capacity)
    }

    mutating func writeVarint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    private mutating func writeKey(_ field: Int, _ type: ProtobufReader.WireType) {
        writeVarint(UInt64(field) << 3 | UInt64(type.rawValue))
    }

    /// A varint field (an enum, an int32 code); proto3 leaves zero out unless `always` (a `oneof` member).
    mutating func writeVarintField(_ field: Int, _ value: UInt64, always: Bool = false) {
        guard always || value != 0 else { return }
        writeKey(field, .varint)
        writeVarint(value)
    }

    mutating func writeBoolField(_ field: Int, _ value: Bool) {
        writeVarintField(field, value ? 1 : 0)
    }

    /// A `fixed64` field (OTLP's Unix-nanosecond times); proto3 leaves zero out.
    mutating func writeFixed64Field(_ field: Int, _ value: UInt64) {
        guard value != 0 else { return }
        writeKey(field, .fixed64)
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func writeDoubleField(_ field: Int, _ value: Double) {
        writeKey(field, .fixed64)
        withUnsafeBytes(of: value.bitPattern.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// A string or bytes field; proto3 leaves an empty one out unless `always`.
    mutating func writeBytesField<Bytes: Collection<UInt8>>(_ field: Int, _ value: Bytes, always: Bool = false) {
        guard always || !value.isEmpty else { return }
        writeKey(field, .lengthDelimited)
        writeVarint(UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    mutating func writeStringField(_ field: Int, _ value: String, always: Bool = false) {
        writeBytesField(field, value.utf8, always: always)
    }

    /// A nested message, written by `body` (present even when empty: its presence may mean something). Written in
    /// place: a one-byte length is reserved and widened only for a message of 128 bytes or more.
    mutating func writeMessageField(_ field: Int, _ body: (inout ProtobufWriter) -> Void) {
        writeKey(field, .lengthDelimited)
        let lengthAt = bytes.count
        bytes.append(0)
        body(&self)
        let length = bytes.count - lengthAt - 1
        if length < 0x80 {
            bytes[lengthAt] = UInt8(length)
            return
        }
        // Widened in place: room for the longer varint, then its bytes (no array of its own).
        var size = 1
        while UInt64(length) >> (7 * size) != 0 { size += 1 }
        bytes.insert(contentsOf: repeatElement(0, count: size - 1), at: lengthAt + 1)
        var value = UInt64(length)
        for index in 0..<size {
            bytes[lengthAt + index] = UInt8(truncatingIfNeeded: value) & 0x7F | (index < size - 1 ? 0x80 : 0)
            value >>= 7
        }
    }

    /// Bytes already encoded as fields of the message being written.
    mutating func appendRaw(_ raw: some Collection<UInt8>) {
        bytes.append(contentsOf: raw)
    }

    /// A `bytes` field holding big-endian 64-bit words (OTLP's trace and span ids), written without an array of its own.
    mutating func writeWordsField(_ field: Int, _ first: UInt64, _ second: UInt64? = nil) {
        writeKey(field, .lengthDelimited)
        writeVarint(second == nil ? 8 : 16)
        withUnsafeBytes(of: first.bigEndian) { bytes.append(contentsOf: $0) }
        if let second { withUnsafeBytes(of: second.bigEndian) { bytes.append(contentsOf: $0) } }
    }
}
