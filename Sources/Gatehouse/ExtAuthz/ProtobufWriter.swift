/// Writes the protobuf wire format for the messages Gatehouse answers with (`CheckResponse`, the health
/// check's answer): fields in number order, nested messages length-prefixed.
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

    /// A varint field (an enum, an int32 code); proto3 leaves zero out.
    mutating func writeVarintField(_ field: Int, _ value: UInt64) {
        guard value != 0 else { return }
        writeKey(field, .varint)
        writeVarint(value)
    }

    mutating func writeBoolField(_ field: Int, _ value: Bool) {
        writeVarintField(field, value ? 1 : 0)
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
        } else {
            var varint = ProtobufWriter(reservingCapacity: 5)
            varint.writeVarint(UInt64(length))
            bytes.replaceSubrange(lengthAt...lengthAt, with: varint.bytes)
        }
    }
}
