import Testing
import GatehouseTokenFixtures
import GatehouseVocabulary
import GatehouseTokens
import GatehouseSyntax

/// `JWSHeaderMemo`: a header segment seen before is taken from the memo, and only the very same bytes are.
struct JWSHeaderMemoTests {
    private typealias F = TokenFixtures

    private func parse(_ token: String, _ memo: JWSHeaderMemo) throws(AuthFailure) -> CompactJWS {
        try CompactJWS.parse(Substring(token), maxBytes: 8192, headers: memo)
    }

    private func remembered(_ header: String, in memo: JWSHeaderMemo) -> [String: JSONValue]? {
        Array(F.segment(header).utf8).withUnsafeBufferPointer { memo.header(for: $0) }
    }

    @Test func aSecondTokenWithTheSameHeaderReadsTheSameAsWithoutTheMemo() throws {
        let memo = JWSHeaderMemo()
        let header = #"{"alg":"RS256","kid":"key-1","typ":"JWT"}"#
        #expect(remembered(header, in: memo) == nil)
        let first = try parse(F.token(header: header, signature: Array(repeating: 1, count: 256)), memo)
        #expect(remembered(header, in: memo) == first.header, "the first parse left its header in the memo")
        let second = try parse(F.token(header: header, payload: #"{"iss":"https://issuer.example","sub":"u2"}"#), memo)
        let plain = try F.parse(F.token(header: header, payload: #"{"iss":"https://issuer.example","sub":"u2"}"#))
        #expect(second.header == plain.header)
        #expect(second.algorithm == plain.algorithm && second.keyID == plain.keyID)
        #expect(second.claims == plain.claims)
    }

    @Test func onlyTheSameBytesHit() throws {
        let memo = JWSHeaderMemo()
        _ = try parse(F.token(header: #"{"alg":"RS256","kid":"a"}"#), memo)
        // The same JSON spelled otherwise is another segment: parsed for itself, never served another's header.
        #expect(remembered(#"{"kid":"a","alg":"RS256"}"#, in: memo) == nil)
        #expect(remembered(#"{"alg":"RS256","kid":"b"}"#, in: memo) == nil)
        let other = try parse(F.token(header: #"{"alg":"ES256","kid":"a"}"#), memo)
        #expect(other.algorithm == .es256)
    }

    @Test func aHeaderThatFailsIsNeverRememberedAndFailsEveryTime() {
        let memo = JWSHeaderMemo()
        let duplicate = #"{"alg":"RS256","alg":"ES256"}"#
        for _ in 0..<2 {
            #expect(throws: AuthFailure.self) { try parse(F.token(header: duplicate), memo) }
        }
        #expect(remembered(duplicate, in: memo) == nil)
        // A header that parses but names `none` is remembered as parsed, and still refused as `none`.
        let none = #"{"alg":"none"}"#
        for _ in 0..<2 {
            do {
                _ = try parse(F.token(header: none), memo)
                Issue.record("alg none accepted")
            } catch {
                #expect(error.reason == .unsupportedAlgorithm)
            }
        }
    }

    @Test func manyHeadersStayWithinTheSlots() throws {
        let memo = JWSHeaderMemo()
        let headers = (0..<(4 * JWSHeaderMemo.slotCount)).map { #"{"alg":"RS256","kid":"key-\#($0)"}"# }
        for header in headers { _ = try parse(F.token(header: header), memo) }
        let kept = headers.filter { remembered($0, in: memo) != nil }.count
        #expect(kept > 0 && kept <= JWSHeaderMemo.slotCount)
        // Every slot is taken now: a header never seen still finds none of the others.
        #expect(remembered(#"{"alg":"RS256","kid":"never-seen"}"#, in: memo) == nil)
        #expect(try parse(F.token(header: #"{"alg":"ES256","kid":"never-seen"}"#), memo).keyID == "never-seen")
    }
}
