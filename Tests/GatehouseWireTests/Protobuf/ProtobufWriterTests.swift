import Testing
import GatehouseSyntax

/// The one protobuf writer, as ext_authz's answers use it: proto3's implicit presence where asked, fields written as
/// asked otherwise, nested messages whose length needs one byte or more.
struct ProtobufWriterTests {
    @Test func theIfSetFormsLeaveZeroAndEmptyOutAndThePlainFormsWriteThem() {
        var writer = ProtobufWriter(capacity: 2)
        writer.writeVarintFieldIfSet(1, 0)
        writer.writeStringFieldIfSet(2, "")
        #expect(writer.bytes.isEmpty)
        writer.writeVarintFieldIfSet(1, 300)
        writer.writeStringFieldIfSet(2, "ok")
        writer.writeVarintField(3, 0)
        writer.writeStringField(4, "")
        #expect(writer.bytes == [0x08, 0xAC, 0x02, 0x12, 0x02, 0x6F, 0x6B, 0x18, 0x00, 0x22, 0x00])
    }

    @Test(arguments: [0, 1, 127, 128, 16_383, 16_384])
    func aNestedMessageOfAnyLengthReadsBack(_ length: Int) throws {
        let text = String(repeating: "x", count: length)
        var writer = ProtobufWriter(capacity: 2)
        writer.writeMessageField(1) { $0.writeStringField(2, text) }
        writer.writeVarintField(3, 7)
        let bytes = writer.bytes
        var outer = ProtobufReader(bytes[...])
        #expect(try outer.nextField()?.number == 1)
        var inner = try outer.readMessage()
        #expect(try inner.nextField()?.number == 2)
        #expect(try inner.readString() == text)
        #expect(try inner.nextField() == nil)
        #expect(try outer.nextField()?.number == 3)
        #expect(try outer.readVarint() == 7)
    }
}
