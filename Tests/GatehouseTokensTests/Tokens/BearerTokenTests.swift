import NIOHTTP1
import Testing
@testable import GatehouseTokens

/// RFC 6750 §2.1 extraction (docs/security.md J41-J44).
struct BearerTokenTests {
    private func extract(_ headers: [(String, String)], cookie: String? = nil, header: String? = nil) -> BearerToken {
        BearerToken.extract(from: HTTPHeaders(headers), cookieName: cookie, headerName: header)
    }

    @Test(arguments: ["Bearer abc.def.ghi", "bearer abc.def.ghi", "BEARER abc.def.ghi", "Bearer  abc.def.ghi", " Bearer abc.def.ghi "])
    func schemeIsCaseInsensitiveAndSpacesTolerated(value: String) {
        #expect(extract([("Authorization", value)]) == .present("abc.def.ghi"))
    }

    @Test func otherSchemeIsNoBearerToken() {
        #expect(extract([("Authorization", "Basic dXNlcjpwYXNz")]) == .absent)
        #expect(extract([("Authorization", "Bearerabc.def.ghi")]) == .absent)
        #expect(extract([("Authorization", "Bearer-X abc")]) == .absent)
    }

    // J42: "Bearer" followed by a byte that can neither separate a token nor continue a scheme name.
    @Test(arguments: ["Bearer\tabc", "Bearer,abc", "Bearer\u{0}abc", "Bearer;abc", "Bearer\"abc\""])
    func bearerWithoutItsSpaceIsMalformed(value: String) {
        guard case .malformed = extract([("Authorization", value)]) else {
            Issue.record("\(value.debugDescription) was not refused as a malformed bearer credential")
            return
        }
    }

    @Test func twoTokensOrEmptyTokenIsMalformed() {
        guard case .malformed = extract([("Authorization", "Bearer a b")]) else { Issue.record("accepted two tokens"); return }
        guard case .malformed = extract([("Authorization", "Bearer")]) else { Issue.record("accepted empty token"); return }
    }

    @Test func twoAuthorizationHeadersAreMalformed() {
        guard case .malformed = extract([("Authorization", "Bearer a"), ("authorization", "Bearer b")]) else {
            Issue.record("accepted two Authorization headers")
            return
        }
    }

    @Test func configuredCookieAndHeaderAreRead() {
        #expect(extract([("Cookie", "a=1; id_token=tok.en.x; b=2")], cookie: "id_token") == .present("tok.en.x"))
        #expect(extract([("X-Api-Token", "tok.en.y")], header: "X-Api-Token") == .present("tok.en.y"))
        #expect(extract([("Cookie", "id_token=tok.en.x")]) == .absent)
    }
}
