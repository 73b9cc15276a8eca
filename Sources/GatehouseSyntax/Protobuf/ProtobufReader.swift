/// A strict reader of the protobuf wire format (https://protobuf.dev/programming-guides/encoding/), for the
/// few messages of Envoy's ext_authz protocol Gatehouse reads (`CheckRequest`). Strict where a lenient
/// decoder would guess: a varint over 10 bytes, a length past the end, a group or unknown wire type, field
/// number 0, a string that is not UTF-8, or nesting past `maxDepth` is an error (the caller answers gRPC
/// `INVALID_ARGUMENT`); unknown fields of known wire types are skipped, as protobuf requires.
public struct ProtobufReader {
    public struct Malformed: Error, Equatable, CustomStringConvertible {
        public let description: String
        @inlinable public init(_ description: String) { self.description = description }
    }

    public enum WireType: UInt8 {
        case varint = 0, fixed64 = 1, lengthDelimited = 2, fixed32 = 5
    }

    /// Messages inside messages, at most (CheckRequest's deepest path Gatehouse reads is 6).
    public static let maxDepth = 16

    @usableFromInline let bytes: ArraySlice<UInt8>
    @usableFromInline var index: Int
    @usableFromInline let depth: Int

    @inlinable public init(_ bytes: ArraySlice<UInt8>, depth: Int = 0) {
        self.bytes = bytes
        self.index = bytes.startIndex
        self.depth = depth
    }

    @inlinable public var isAtEnd: Bool { index >= bytes.endIndex }

    /// The next field's number and wire type; nil at the end of the message.
    @inlinable public mutating func nextField() throws(Malformed) -> (number: Int, type: WireType)? {
        guard !isAtEnd else { return nil }
        let key = try readVarint()
        guard let type = WireType(rawValue: UInt8(key & 7)) else { throw Malformed("wire type \(key & 7)") }
        let number = key >> 3
        guard number > 0, number <= 536_870_911 else { throw Malformed("field number \(number)") }
        return (Int(number), type)
    }

    @inlinable public mutating func readVarint() throws(Malformed) -> UInt64 {
        var value: UInt64 = 0
        for shift in stride(from: 0, to: 70, by: 7) {
            guard index < bytes.endIndex else { throw Malformed("varint past the end") }
            let byte = bytes[index]
            index += 1
            if shift == 63 && byte > 1 { throw Malformed("varint over 64 bits") }
            value |= UInt64(byte & 0x7F) << UInt64(shift)
            if byte & 0x80 == 0 { return value }
        }
        throw Malformed("varint over 10 bytes")
    }

    /// The bytes of a length-delimited field.
    @inlinable public mutating func readLengthDelimited() throws(Malformed) -> ArraySlice<UInt8> {
        let length = try readVarint()
        guard length <= UInt64(bytes.endIndex - index) else { throw Malformed("length \(length) past the end") }
        let start = index
        index += Int(length)
        return bytes[start..<index]
    }

    @inlinable public mutating func readString() throws(Malformed) -> String {
        let raw = try readLengthDelimited()
        guard let text = StringBytes.string(validatingUTF8: raw) else { throw Malformed("string that is not UTF-8") }
        return text
    }

    /// A nested message's reader, one level deeper.
    @inlinable public mutating func readMessage() throws(Malformed) -> ProtobufReader {
        guard depth < Self.maxDepth else { throw Malformed("messages nested over \(Self.maxDepth) deep") }
        return ProtobufReader(try readLengthDelimited(), depth: depth + 1)
    }

    /// Skips a field this reader does not read.
    @inlinable public mutating func skip(_ type: WireType) throws(Malformed) {
        switch type {
        case .varint: _ = try readVarint()
        case .lengthDelimited: _ = try readLengthDelimited()
        case .fixed64: try advance(8)
        case .fixed32: try advance(4)
        }
    }

    /// A field of the wire type its schema says, or an error.
    @inlinable public static func expect(_ type: WireType, _ expected: WireType, field: String) throws(Malformed) {
        guard type == expected else { throw Malformed("\(field) of wire type \(type.rawValue)") }
    }

    @usableFromInline mutating func advance(_ count: Int) throws(Malformed) {
        guard bytes.endIndex - index >= count else { throw Malformed("fixed field past the end") }
        index += count
    }
}
