import NIOHTTP1
import Testing
import GatehouseHTTP
import GatehouseExchange
import GatehouseConfig


/// The HTTP/2 request head read by Gatehouse's rules (docs/security.md H11-H15) and request trailers
/// as forwarded (P53), without a socket; HTTP2IntakeTests shows the same end to end.
struct HTTP2RequestHeadReaderTests {
    private func block(_ fields: [(String, String)], authority: String? = "api.test", method: String = "GET") -> HTTP2FieldList {
        var all = [(":method", method), (":scheme", "https")]
        if let authority { all.append((":authority", authority)) }
        all.append((":path", "/v1/orders"))
        return all + fields
    }

    private func read(_ block: HTTP2FieldList, endStream: Bool = true, maxHeaderBytes: Int = 16384) -> HTTPRequestHead? {
        try? HTTP2RequestHeadReader.read(fields: block, endStream: endStream, maxHeaderBytes: maxHeaderBytes).get().head
    }

    /// How a refused block is answered (nil when it is read).
    private func refusal(_ block: HTTP2FieldList, maxHeaderBytes: Int = 16384) -> HTTP2RequestHeadReader.Malformed.Answer? {
        guard case .failure(let malformed) = HTTP2RequestHeadReader.read(fields: block, endStream: true, maxHeaderBytes: maxHeaderBytes) else { return nil }
        return malformed.answer
    }

    @Test func theHostIsAuthorityAndAppearsOnce() throws {
        let head = try #require(read(block([("host", "API.test"), ("accept", "*/*")])))
        #expect(head.headers["host"] == ["api.test"])
        #expect(head.method == .GET)
        #expect(head.uri == "/v1/orders")
        #expect(head.version == .http2)
        #expect(head.headers["accept"] == ["*/*"])
    }

    @Test func hostAloneIsTheHost() throws {
        let head = try #require(read(block([("host", "api.example")], authority: nil)))
        #expect(head.headers["host"] == ["api.example"])
    }

    @Test(arguments: [
        ([("host", "evil.example")], "api.test" as String?),
        ([], nil),
        ([("host", "a.example"), ("host", "a.example")], nil),
        ([("host", "api.test"), ("host", "api.test")], "api.test"),
    ])
    func disagreeingMissingOrRepeatedHostsAreMalformed(fields: [(String, String)], authority: String?) {
        #expect(read(block(fields, authority: authority)) == nil)
    }

    @Test func cookieCrumbsAreJoinedIntoOneField() throws {
        let head = try #require(read(block([("cookie", "a=1"), ("accept", "*/*"), ("cookie", "b=2"), ("cookie", "c=3")])))
        #expect(head.headers["cookie"] == ["a=1; b=2; c=3"])
    }

    @Test(arguments: [" lead", "trail ", "\tlead", "trail\t", "a\u{01}b", "a\u{7F}b", "a\u{1B}b", "a\u{0B}b"])
    func valuesTheHTTP1ParserWouldRefuseAreMalformed(value: String) {
        #expect(read(block([("x-note", value)])) == nil)
        #expect((try? HTTP2RequestHeadReader.readTrailers(fields: ([("x-note", value)]), maxBytes: 16384).get()) == nil)
    }

    @Test(arguments: ["a b", "a\tb", "", "caf\u{E9}", "\"quoted\"", "\u{1F510} \u{202E}"])
    func innerWhitespaceEmptyAndObsTextValuesAreKept(value: String) throws {
        let head = try #require(read(block([("x-note", value)])))
        #expect(head.headers["x-note"] == [value])
    }

    @Test(arguments: ["G(ET", "get", "FROB", "GET ", ""])
    func methodsTheHTTP1ParserDoesNotKnowAreMalformed(method: String) {
        #expect(read(block([], method: method)) == nil)
    }

    @Test func aBodyMethodEndedWithItsHeadSaysItsBodyIsEmpty() throws {
        let ended = try #require(read(block([], method: "POST"), endStream: true))
        #expect(ended.headers["content-length"] == ["0"])
        let open = try #require(read(block([], method: "POST"), endStream: false))
        #expect(open.headers["content-length"].isEmpty)
        let get = try #require(read(block([]), endStream: true))
        #expect(get.headers["content-length"].isEmpty)
    }

    /// RFC 9110 §8.6 as the HTTP/1.1 parser reads it: one field of 1-18 digits; sent on as plain digits
    /// (docs/security.md H18).
    @Test(arguments: [
        [("content-length", "+5")], [("content-length", "5, 5")], [("content-length", "5"), ("content-length", "5")],
        [("content-length", "-1")], [("content-length", " 5")], [("content-length", "0x5")], [("content-length", "")],
        [("content-length", "1234567890123456789")],
    ])
    func aContentLengthThatIsNotOneFieldOfDigitsIsABadRequest(fields: [(String, String)]) {
        #expect(refusal(block(fields, method: "POST")) == .badRequest)
    }

    @Test func aContentLengthIsSentOnAsPlainDigits() throws {
        let padded = try #require(read(block([("content-length", "005")], method: "POST"), endStream: false))
        #expect(padded.headers["content-length"] == ["5"])
        let plain = try #require(read(block([("content-length", "5")], method: "POST"), endStream: false))
        #expect(plain.headers["content-length"] == ["5"])
        let zero = try #require(read(block([("content-length", "000")], method: "POST"), endStream: false))
        #expect(zero.headers["content-length"] == ["0"])
    }

    /// RFC 9110 §10.1.4: TE's values are case-insensitive (H21).
    @Test(arguments: ["trailers", "Trailers", "TRAILERS"])
    func teTrailersIsAcceptedInAnyCase(value: String) throws {
        let head = try #require(read(block([("te", value)])))
        #expect(head.headers["te"] == ["trailers"])
    }

    /// What RFC 9113 makes malformed resets the stream (NIO's validation is off; the reader is the one check).
    @Test(arguments: [
        [("te", "gzip")], [("te", "trailers, gzip")], [("connection", "close")], [("transfer-encoding", "chunked")],
        [("keep-alive", "1")], [("proxy-connection", "close")], [("upgrade", "h2c")], [("X-Upper", "a")], [("", "a")],
        [("x note", "a")], [("x-note", "a\rb")], [("x-note", "a\nb")], [("x-note", "a\u{0}b")], [(":path", "/again")],
        [(":status", "200")], [(":protocol", "websocket")],
    ])
    func malformedBlocksResetTheStream(fields: [(String, String)]) {
        #expect(refusal(block(fields)) == .reset, "\(fields)")
    }

    @Test func pseudoHeadersComeFirstOnceAndAllThree() {
        #expect(refusal(([(":method", "GET"), ("x-a", "1"), (":scheme", "https"), (":path", "/"), (":authority", "a")])) == .reset)
        #expect(refusal(([(":method", "GET"), (":method", "GET"), (":scheme", "https"), (":path", "/"), (":authority", "a")])) == .reset)
        #expect(refusal(([(":method", "GET"), (":path", "/"), (":authority", "a")])) == .reset)
        #expect(refusal(([(":method", "GET"), (":scheme", "https"), (":authority", "a")])) == .reset)
        #expect(refusal(([(":method", "GET"), (":scheme", "https"), (":path", ""), (":authority", "a")])) == .reset)
        #expect(refusal(([(":scheme", "https"), (":path", "/"), (":authority", "a")])) == .reset)
        #expect(refusal(([(":method", "GET"), (":scheme", "https"), (":path", "/a b"), (":authority", "a")])) == .reset)
        // CONNECT is refused like on the HTTP/1.1 door (P18-19), not reset.
        #expect(refusal(([(":method", "CONNECT"), (":authority", "a:443")])) == .badRequest)
    }

    /// obs-text only as UTF-8 (H20): the HTTP/2 door's String(decoding:) has turned other bytes into U+FFFD by now.
    @Test func aValueWithTheReplacementCharacterIsABadRequest() {
        #expect(refusal(block([("x-note", "caf\u{FFFD}")])) == .badRequest)
        #expect((try? HTTP2RequestHeadReader.readTrailers(fields: ([("x-note", "\u{FFFD}")]), maxBytes: 16384).get()) == nil)
    }

    /// A section over max_header_bytes is a 431 of its own stream (H19); its trailers get what the head left.
    @Test func aSectionOverTheLimitIsTooLargeAndTrailersShareIt() throws {
        let big = String(repeating: "a", count: 1000)
        #expect(refusal(block([("x-big", big)]), maxHeaderBytes: 1000) == .tooLarge)
        let read = try HTTP2RequestHeadReader.read(fields: block([("x-big", big)]), endStream: false, maxHeaderBytes: 2000).get()
        #expect(read.sectionBytes > 1000 && read.sectionBytes < 1100)
        let left = 2000 - read.sectionBytes
        #expect((try? HTTP2RequestHeadReader.readTrailers(fields: ([("x-t", big)]), maxBytes: left).get()) == nil)
        #expect((try? HTTP2RequestHeadReader.readTrailers(fields: ([("x-t", "small")]), maxBytes: left).get()) != nil)
    }

    @Test func requestTrailersLoseEveryIdentityAndForbiddenField() {
        let head = UpstreamRequestHead(
            identityHeaderNames: IdentityHeaderNames(mappings: HeaderSettings.defaultMappings + [HeaderMapping(name: "X-User-Email", claimPath: "email")]),
            headerMappings: [HeaderSettings.defaultMappings], forwardClaimsJSON: true, forwardToken: true, tokenHeaderName: "x-api-token")
        let trailers: HTTPHeaders = [
            "x-auth-subject": "admin", "x_auth_subject": "admin", "X-AUTH-CLAIMS": "e30", "x-user_email": "evil@example.com",
            "authorization": "Bearer forged", "x-api-token": "forged", "cookie": "a=1", "host": "evil", "content-length": "1",
            "transfer-encoding": "chunked", "te": "trailers", "connection": "x-checksum", "x-request-id": "forged",
            "x-forwarded-for": "10.0.0.1", "grpc-trace": "kept", "x-digest": "kept",
        ]
        #expect(head.makeTrailers(trailers).map { $0.map(\.name) } == ["grpc-trace", "x-digest"])
        #expect(head.makeTrailers(["X-Auth-Subject": "admin"]) == nil)
    }
}
