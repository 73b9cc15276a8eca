import NIOHPACK
import NIOHTTP1
import Testing

@testable import Gatehouse

/// The HTTP/2 request head read by Gatehouse's rules (docs/security.md H11-H15) and request trailers
/// as forwarded (P53), without a socket; HTTP2IntakeTests shows the same end to end.
struct HTTP2RequestHeadReaderTests {
    private func block(_ fields: [(String, String)], authority: String? = "api.test", method: String = "GET") -> HPACKHeaders {
        var all = [(":method", method), (":scheme", "https")]
        if let authority { all.append((":authority", authority)) }
        all.append((":path", "/v1/orders"))
        return HPACKHeaders(all + fields)
    }

    private func read(_ block: HPACKHeaders, endStream: Bool = true) -> HTTPRequestHead? {
        try? HTTP2RequestHeadReader.read(block, endStream: endStream).get()
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
        #expect((try? HTTP2RequestHeadReader.readTrailers(HPACKHeaders([("x-note", value)])).get()) == nil)
    }

    @Test(arguments: ["a b", "a\tb", "", "caf\u{E9}", "\"quoted\""])
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
