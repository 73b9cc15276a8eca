/// Writes the protobuf wire format (https://protobuf.dev/programming-guides/encoding/) into memory of its own, grown
/// when a write needs more: Gatehouse's one writer, for ext_authz's answers (`CheckResponse`, the health check) and for
/// every sampled request's spans and their OTLP export. Each byte costs a store, not an array append (an `Array`'s
/// uniqueness check is a runtime call per byte). Noncopyable: it owns its memory, freed with it.
///
/// A field is written as asked; the `…IfSet` forms follow proto3's implicit presence and leave a zero or an empty
/// value out (never use them inside a `oneof`, where presence is the meaning).
public struct ProtobufWriter: ~Copyable {
    @usableFromInline var base: UnsafeMutablePointer<UInt8>
    @usableFromInline var capacity: Int
    @usableFromInline var count = 0

    @inlinable public init(capacity: Int) {
        self.capacity = max(capacity, 64)
        base = .allocate(capacity: self.capacity)
    }

    deinit { base.deallocate() }

    /// The bytes written so far, for as long as `body` runs.
    @inlinable public func withBytes<T>(_ body: (UnsafeBufferPointer<UInt8>) -> T) -> T {
        body(UnsafeBufferPointer(start: base, count: count))
    }

    @inlinable public var bytes: [UInt8] { withBytes { Array($0) } }

    /// Room for `more` bytes after what is written.
    @inline(__always)
    @inlinable mutating func reserve(_ more: Int) {
        if _slowPath(count + more > capacity) { grow(toFit: more) }
    }

    @inline(never)
    @usableFromInline mutating func grow(toFit more: Int) {
        let grown = max(capacity * 2, count + more)
        let moved = UnsafeMutablePointer<UInt8>.allocate(capacity: grown)
        moved.initialize(from: base, count: count)
        base.deallocate()
        base = moved
        capacity = grown
    }

    /// Most varints a span holds (keys, lengths under 128) are one byte: that case is inlined.
    @inline(__always)
    @inlinable public mutating func writeVarint(_ value: UInt64) {
        reserve(10)
        if _fastPath(value < 0x80) {
            base[count] = UInt8(truncatingIfNeeded: value)
            count += 1
        } else {
            writeLongVarint(value)
        }
    }

    @inlinable mutating func writeLongVarint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            base[count] = UInt8(truncatingIfNeeded: value) | 0x80
            count += 1
            value >>= 7
        }
        base[count] = UInt8(value)
        count += 1
    }

    /// A field's key: its number and wire type.
    @inline(__always)
    @inlinable public mutating func writeKey(_ field: Int, _ type: ProtobufReader.WireType) {
        writeVarint(UInt64(field) << 3 | UInt64(type.rawValue))
    }

    @inlinable public mutating func writeVarintField(_ field: Int, _ value: UInt64) {
        writeKey(field, .varint)
        writeVarint(value)
    }

    /// proto3's implicit presence: zero is not written.
    @inlinable public mutating func writeVarintFieldIfSet(_ field: Int, _ value: UInt64) {
        if value != 0 { writeVarintField(field, value) }
    }

    @inlinable public mutating func writeFixed64Field(_ field: Int, _ value: UInt64) {
        writeKey(field, .fixed64)
        reserve(8)
        UnsafeMutableRawPointer(base + count).storeBytes(of: value.littleEndian, as: UInt64.self)
        count += 8
    }

    /// A `bytes` field of big-endian 64-bit words (OTLP's trace and span ids).
    @inlinable public mutating func writeWordsField(_ field: Int, _ first: UInt64, _ second: UInt64? = nil) {
        writeKey(field, .lengthDelimited)
        writeVarint(second == nil ? 8 : 16)
        reserve(16)
        UnsafeMutableRawPointer(base + count).storeBytes(of: first.bigEndian, as: UInt64.self)
        count += 8
        if let second {
            UnsafeMutableRawPointer(base + count).storeBytes(of: second.bigEndian, as: UInt64.self)
            count += 8
        }
    }

    /// A string or bytes field, written even when empty.
    @inlinable public mutating func writeBytesField(_ field: Int, _ value: UnsafeBufferPointer<UInt8>) {
        writeKey(field, .lengthDelimited)
        writeVarint(UInt64(value.count))
        writeRaw(value)
    }

    @inlinable public mutating func writeStringField(_ field: Int, _ value: String) {
        var value = value
        value.withUTF8 { writeBytesField(field, $0) }
    }

    @inlinable public mutating func writeStringField(_ field: Int, _ value: Substring) {
        var value = value
        value.withUTF8 { writeBytesField(field, $0) }
    }

    /// proto3's implicit presence: an empty string is not written.
    @inlinable public mutating func writeStringFieldIfSet(_ field: Int, _ value: String) {
        if !value.isEmpty { writeStringField(field, value) }
    }

    /// Bytes already encoded as fields of the message being written.
    @inlinable public mutating func writeRaw(_ raw: UnsafeBufferPointer<UInt8>) {
        guard let source = raw.baseAddress, !raw.isEmpty else { return }
        reserve(raw.count)
        (base + count).update(from: source, count: raw.count)
        count += raw.count
    }

    @inlinable public mutating func writeRaw(_ raw: [UInt8]) {
        raw.withUnsafeBufferPointer { writeRaw($0) }
    }

    /// A nested message written by `body`: a one-byte length is set aside, and the message moved along for a longer one.
    @inlinable public mutating func writeMessageField(_ field: Int, _ body: (inout ProtobufWriter) -> Void) {
        writeKey(field, .lengthDelimited)
        reserve(1)
        let lengthAt = count
        count += 1
        body(&self)
        let length = count - lengthAt - 1
        guard length >= 0x80 else {
            base[lengthAt] = UInt8(length)
            return
        }
        var size = 1
        while UInt64(length) >> (7 * UInt64(size)) != 0 { size += 1 }
        reserve(size - 1)
        UnsafeMutableRawPointer(base + lengthAt + size).copyMemory(from: base + lengthAt + 1, byteCount: length)  // memmove: overlapping
        var value = UInt64(length)
        for index in 0..<size {
            base[lengthAt + index] = UInt8(truncatingIfNeeded: value) & 0x7F | (index < size - 1 ? 0x80 : 0)
            value >>= 7
        }
        count += size - 1
    }
}
