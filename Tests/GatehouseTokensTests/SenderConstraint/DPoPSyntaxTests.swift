import Crypto
import Testing
@testable import GatehouseSyntax
import GatehouseVocabulary
import GatehouseTokens

/// The pure parts of DPoP (RFC 9449): the RFC 7638 thumbprint a bound token names, and the `htu`
/// comparison after RFC 3986 syntax-based normalization.
struct DPoPSyntaxTests {
    /// RFC 7638 §3.1's worked example.
    @Test func thumbprintOfTheRFC7638ExampleKey() throws {
        let jwk: [String: JSONValue] = [
            "kty": .string("RSA"), "e": .string("AQAB"), "alg": .string("RS256"), "kid": .string("2011-04-29"),
            "n": .string("0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw"),
        ]
        #expect(JWKThumbprint.sha256(of: jwk) == "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs")
    }

    /// RFC 9449 §6.1: the proof key of the specification's examples and the `cnf.jkt` its tokens carry.
    @Test func thumbprintOfTheRFC9449ExampleKey() {
        let jwk: [String: JSONValue] = [
            "kty": .string("EC"), "crv": .string("P-256"),
            "x": .string("l8tFrhx-34tV3hRICRDY9zCkDlpBhF42UQUfWVAWBFs"), "y": .string("9VE4jf_Ok_o64zbTTlcuNJajHmt6v9TDVrU0CdvGRDA"),
        ]
        #expect(JWKThumbprint.sha256(of: jwk) == "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I")
    }

    @Test func thumbprintNeedsEveryRequiredMemberAsAString() {
        #expect(JWKThumbprint.sha256(of: ["kty": .string("EC"), "crv": .string("P-256"), "x": .string("AA")]) == nil)
        #expect(JWKThumbprint.sha256(of: ["kty": .string("oct"), "k": .string("AA")]) == nil)
        #expect(JWKThumbprint.sha256(of: ["kty": .string("OKP"), "crv": .string("Ed25519"), "x": .number("1")]) == nil)
    }

    @Test(arguments: [
        ("https://API.Example.com:443/a/%7euser/./b/../c", "https://api.example.com/a/~user/c"),
        ("HTTP://example.com:80", "http://example.com/"),
        ("http://example.com:8080/%2f%c3%a9", "http://example.com:8080/%2F%C3%A9"),
        ("https://[::1]:8443/x", "https://[::1]:8443/x"),
        ("https://example.com/a/b/..", "https://example.com/a/"),
        // RFC 9449 §4.3 check 9: the query and fragment are ignored.
        ("https://example.com/a?b=1", "https://example.com/a"),
        ("https://example.com/a#f", "https://example.com/a"),
        ("https://example.com?b", "https://example.com/"),
    ])
    func equivalentSpellingsNormalizeToOneURI(_ written: String, _ normalized: String) {
        #expect(DPoPTargetURI.normalized(written) == normalized)
    }

    @Test(arguments: [
        "ftp://example.com/a", "/relative", "https://user@example.com/",
        "https:///path", "https://example.com/%zz", "https://example.com:x/",
    ])
    func anHtuThatIsNotAnAbsoluteHTTPURIIsRefused(_ written: String) {
        #expect(DPoPTargetURI.normalized(written) == nil)
    }

    @Test func theRequestURIDropsItsQueryAndTakesTheOrigin() {
        #expect(DPoPTargetURI.requestURI(origin: "https://API.example.com", target: "/v1/orders?x=1#y") == "https://api.example.com/v1/orders")
        #expect(DPoPTargetURI.requestURI(origin: "http://ignored", target: "http://other.test/p?q") == "http://other.test/p")
    }

    @Test func typIsComparedAsAMediaTypeName() {
        #expect(MediaTypeName.matches("dpop+jwt", "dpop+jwt"))
        #expect(MediaTypeName.matches("application/DPoP+JWT", "dpop+jwt"))
        #expect(!MediaTypeName.matches("jwt", "dpop+jwt"))
        #expect(!MediaTypeName.matches("text/dpop+jwt", "dpop+jwt"))
    }
}
