import NIOHTTP1
import Testing
@testable import GatehouseExchange
import GatehouseConfig


struct HeaderHygieneTests {
    private let defaultNames = IdentityHeaderNames(mappings: HeaderSettings.defaultMappings)

    private func names(_ headers: HTTPHeaders) -> [String] {
        headers.map(\.name)
    }

    // docs/security.md P01-P04
    @Test(arguments: ["X-Auth-Subject", "x-auth-subject", "X-AUTH-SUBJECT", "x-auth-anything", "X-Auth-Provider", "X-Auth-Claims",
                      "X-Auth-Guest", "X_Auth_Subject", "X-Auth_Subject", "x_auth_", "X-Auth-"])
    func xAuthHeadersInAnySpellingAreIdentityHeaders(name: String) {
        #expect(defaultNames.isIdentityHeader(name))
    }

    @Test(arguments: ["Authorization", "X-Auth", "X-Authorization", "X-Authx-Subject", "XAuth-Subject", "Host", "X-User", "x-auth",
                      "X-Forwarded-For"])
    func otherHeadersAreNotIdentityHeaders(name: String) {
        #expect(!defaultNames.isIdentityHeader(name))
    }

    @Test(arguments: ["X-User-Email", "x-user-email", "X_USER_EMAIL", "X-User_Email", "X-Tenant", "x_tenant"])
    func configuredNamesAreFoldedTheSameWay(name: String) {
        let names = IdentityHeaderNames(mappings: [
            HeaderMapping(name: "X-User-Email", claimPath: "email"),
            HeaderMapping(name: "X_Tenant", claimPath: "tenant.id"),
        ])
        #expect(names.isIdentityHeader(name))
        #expect(!names.isIdentityHeader(name + "s"))
        #expect(!names.isIdentityHeader(String(name.dropLast())))
    }

    @Test func removesEveryIdentityHeaderAndKeepsTheRest() {
        var headers: HTTPHeaders = [
            "Host": "api.test", "X-Auth-Subject": "admin", "x_auth_subject": "admin", "X-Auth_Email": "boss@example.com",
            "X-AUTH-WHATEVER": "1", "X-User-Email": "boss@example.com", "X_User_Email": "boss@example.com", "Accept": "*/*",
            "X-Auth-Subject ": "ignored",
        ]
        let identityNames = IdentityHeaderNames(
            mappings: HeaderSettings.defaultMappings + [HeaderMapping(name: "X-User-Email", claimPath: "email")]
        )
        HeaderHygiene.removeIdentityHeaders(&headers, names: identityNames)
        #expect(names(headers) == ["Host", "Accept"])
    }

    @Test func removesTheFixedHopByHopHeaders() {
        var headers: HTTPHeaders = [
            "Host": "api.test", "Connection": "keep-alive", "Keep-Alive": "timeout=5", "TE": "trailers", "Trailer": "X-Checksum",
            "Transfer-Encoding": "chunked", "Upgrade": "h2c", "Proxy-Connection": "keep-alive", "Proxy-Authorization": "Basic eA==",
            "Proxy-Authenticate": "Basic", "Proxy-Anything": "1", "Proxy": "http://evil.test", "Transfer_Encoding": "chunked",
            "Content-Type": "text/plain", "Authorization": "Bearer t",
        ]
        HeaderHygiene.removeHopByHop(&headers, keepWebSocketUpgrade: false)
        #expect(names(headers) == ["Host", "Content-Type", "Authorization"])
    }

    @Test func removesEveryNameConnectionLists() {
        var headers: HTTPHeaders = [
            "Connection": "close, X-Custom ,\tx_other", "Connection": "Foo", "X-Custom": "1", "X-Other": "2", "foo": "3", "X-Kept": "4",
        ]
        HeaderHygiene.removeHopByHop(&headers, keepWebSocketUpgrade: false)
        #expect(names(headers) == ["X-Kept"])
    }

    @Test func connectionCannotRemoveFramingOrHost() {
        var headers: HTTPHeaders = ["Host": "api.test", "Content-Length": "5", "Connection": "Content-Length, host, , ,"]
        HeaderHygiene.removeHopByHop(&headers, keepWebSocketUpgrade: false)
        #expect(names(headers) == ["Host", "Content-Length"])
    }

    // docs/security.md P05: the client's Connection header only acts on the client's headers.
    @Test func connectionListingAnIdentityHeaderCannotRemoveTheOneAddedAfterwards() {
        var headers: HTTPHeaders = ["Host": "api.test", "Connection": "close, X-Auth-Subject", "X-Auth-Subject": "forged"]
        HeaderHygiene.removeHopByHop(&headers, keepWebSocketUpgrade: false)
        HeaderHygiene.removeIdentityHeaders(&headers, names: defaultNames)
        headers.add(name: "X-Auth-Subject", value: "verified-sub")
        #expect(headers["X-Auth-Subject"] == ["verified-sub"])
        #expect(!headers.contains(name: "Connection"))
    }

    // docs/security.md P26
    @Test func webSocketUpgradeKeepsOnlyUpgradeWebsocketAndConnectionUpgrade() {
        var headers: HTTPHeaders = [
            "Host": "api.test", "Connection": "Upgrade, keep-alive, X-Drop", "Upgrade": "websocket, h2c", "X-Drop": "1",
            "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version": "13", "Keep-Alive": "timeout=5",
        ]
        HeaderHygiene.removeHopByHop(&headers, keepWebSocketUpgrade: true)
        #expect(headers["Upgrade"] == ["websocket"])
        #expect(headers["Connection"] == ["upgrade"])
        #expect(!headers.contains(name: "X-Drop") && !headers.contains(name: "Keep-Alive"))
        #expect(headers["Sec-WebSocket-Key"] == ["dGhlIHNhbXBsZSBub25jZQ=="])
    }

    @Test func headersWithoutHopByHopOrIdentityNamesAreUntouched() {
        let original: HTTPHeaders = ["Host": "api.test", "Accept": "*/*", "Authorization": "Bearer t", "Cookie": "a=b"]
        var headers = original
        HeaderHygiene.removeHopByHop(&headers, keepWebSocketUpgrade: false)
        HeaderHygiene.removeIdentityHeaders(&headers, names: defaultNames)
        #expect(headers == original)
    }
}

/// `TE: trailers` (what a gRPC call sends, forwarded to an HTTP/2 upstream): the token, in any case, among others.
struct TrailersAcceptanceTests {
    @Test(arguments: ["trailers", "Trailers", " TRAILERS\t", "gzip, trailers", "trailers,deflate", ",, trailers ,"])
    func aListNamingTrailersAcceptsThem(_ value: String) {
        #expect(HeaderHygiene.listsTrailers(value))
    }

    @Test(arguments: ["", "gzip", "trailer", "trailerss", "notrailers", "trailers-x", "tra iler s", "trailers;q=1x"])
    func aListWithoutTheTokenDoesNot(_ value: String) {
        #expect(!HeaderHygiene.listsTrailers(value))
    }
}
