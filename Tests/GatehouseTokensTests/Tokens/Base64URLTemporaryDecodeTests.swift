import Testing
import GatehouseSyntax

/// `Base64URL.withDecoded`, the payload's decoder (into a temporary buffer): the same bytes and the same refusals as `decode`.
@Suite struct Base64URLTemporaryDecodeTests {
    private func decodedByBoth(_ text: String) -> (array: [UInt8]?, temporary: [UInt8]?, calledBody: Bool) {
        let bytes = Array(text.utf8)
        var called = false
        let temporary = bytes.withUnsafeBufferPointer { input in
            Base64URL.withDecoded(buffer: input) { decoded -> [UInt8] in
                called = true
                return Array(decoded)
            }
        }
        return (Base64URL.decode(bytes), temporary, called)
    }

    @Test func decodesAsDecodeDoesAndRefusesWhatItRefuses() {
        let long = Base64URL.encode((0..<3000).map { UInt8(truncatingIfNeeded: $0 * 7) })  // beyond any stack allowance
        for text in ["", "QQ", "QUI", "QUJD", "eyJzdWIiOiJ1MSJ9", long] {
            let both = decodedByBoth(text)
            #expect(both.temporary != nil && both.temporary == both.array, "\(text.prefix(20))")
        }
        for text in ["Q", "QR", "QUJ=", "QU+D", "QU/D", "QUJ D", "QUJDR"] {
            let both = decodedByBoth(text)
            #expect(both.array == nil && both.temporary == nil && !both.calledBody, "\(text) is not canonical")
        }
    }
}
