import Testing
@testable import GatehouseExchange

struct RequestIDTests {
    @Test func saneClientIDIsKept() {
        #expect(RequestID.acceptOrGenerate("6f1c-abc_1.2:3") == "6f1c-abc_1.2:3")
    }

    @Test(arguments: ["", "has space", "new\nline", "quote\"", String(repeating: "a", count: 129)])
    func unsafeClientIDIsReplaced(value: String) {
        let id = RequestID.acceptOrGenerate(value)
        #expect(id != value)
        #expect(id.count == 32 && RequestID.isAcceptable(id))
    }

    @Test func generatedIDsDiffer() {
        #expect(RequestID.generate() != RequestID.generate())
    }
}
