import Testing
import GatehousePolicy


struct PathNormalizerTests {
    private func path(_ target: String) -> String? {
        PathNormalizer.normalize(target)?.path
    }

    @Test(arguments: ["/", "/a", "/a/b", "/a/b/", "/v1/events", "/.well-known/openid-configuration", "/a;b=c/d", "/~user/x-y_z.txt",
                      "/a:b@c!$&'()*+,=", "/..a", "/a..", "/x/...", "/%2F", "/a%20b", "/a[0]"])
    func canonicalPathIsUnchanged(target: String) {
        #expect(path(target) == target)
    }

    @Test func canonicalTargetWithoutQueryReturnsTheSameString() throws {
        let normalized = try #require(PathNormalizer.normalize("/v1/sync/items"))
        #expect(normalized.path == "/v1/sync/items")
        #expect(normalized.query == nil)
        #expect(normalized.requestURI == "/v1/sync/items")
    }

    // docs/security.md P15
    @Test(arguments: [
        ("/public/../admin", "/admin"),
        ("/public/%2e%2e/admin", "/admin"),
        ("/public/%2E%2E/admin", "/admin"),
        ("/public/.%2e/admin", "/admin"),
        ("//admin", "/admin"),
        ("/public//../admin", "/admin"),
        ("/./admin", "/admin"),
        ("/%2e/admin", "/admin"),
        ("/a/./b/../../admin", "/admin"),
        ("/a/b/c/./../../g", "/a/g"),
        ("/../admin", "/admin"),
        ("/../../../admin", "/admin"),
        ("/a/..", "/"),
        ("/a/b/..", "/a/"),
        ("/a/b/.", "/a/b/"),
        ("/..", "/"),
        ("/.", "/"),
        ("//", "/"),
        ("///a///b//", "/a/b/"),
    ])
    func dotSegmentsAndSlashRunsResolveToOnePath(target: String, expected: String) {
        #expect(path(target) == expected)
    }

    @Test func pathParametersOutsideDotSegmentsAreData() {
        #expect(path("/admin;x") == "/admin;x")
        #expect(path("/admin;x/y") == "/admin;x/y")
        #expect(path("/a;/..") == "/")
    }

    @Test(arguments: ["/public/..;/admin", "/public/..;x/admin", "/public/.;/admin", "/.;x", "/..;", "/public/%2e%2e;/admin",
                      "/public/..%3b/admin", "/public/..%3Bx/admin", "/public/.%3B/admin"])
    func dotSegmentWithParametersIsRejected(target: String) {
        #expect(PathNormalizer.normalize(target) == nil)
    }

    @Test func encodedSlashStaysEncodedAndIsNeverASeparator() {
        #expect(path("/a%2fb") == "/a%2Fb")
        #expect(path("/a%2Fb/../c") == "/c")
        #expect(path("/files/a%2Fb%2Fc") == "/files/a%2Fb%2Fc")
    }

    @Test(arguments: ["/public/..%2Fadmin", "/public/%2e%2e%2fadmin", "/a%2F..", "/a%2F.%2Fb", "/public/..;%2Fadmin", "/a%2F..;x%2Fb"])
    func encodedSlashAroundADotPieceIsRejected(target: String) {
        #expect(PathNormalizer.normalize(target) == nil)
    }

    @Test func unreservedEscapesAreDecodedAndOthersUpperCased() {
        #expect(path("/%41%62%30%2D%2e%5F%7e") == "/Ab0-._~")
        #expect(path("/caf%c3%a9") == "/caf%C3%A9")
        #expect(path("/a%20b%3a%40") == "/a%20b%3A%40")
        #expect(path("/%25") == "/%25")
        #expect(path("/%3b") == "/%3B")
    }

    @Test(arguments: ["/a%", "/a%4", "/a%zz", "/a%4g", "/a%%41", "/%0", "/a%2"])
    func brokenEscapeIsRejected(target: String) {
        #expect(PathNormalizer.normalize(target) == nil)
    }

    @Test(arguments: ["/a%00", "/%00/b", "/admin%5c..%5cpublic", "/a%5Cb", "/a\\b", "/public\\..\\admin"])
    func nulAndBackslashAreRejected(target: String) {
        #expect(PathNormalizer.normalize(target) == nil)
    }

    // docs/security.md P12, P18
    @Test(arguments: ["", "*", "admin", "http://example.com/admin", "https://example.com/", "example.com:443",
                      "/a b", "/a\tb", "/a\r\nX-Auth-Subject: x", "/a\n", "/a\u{0}", "/a\u{7f}", "/caf\u{e9}", "/\u{202e}", "/a\"b", "/a<b",
                      "/a>b", "/a^b", "/a`b", "/a{b", "/a|b", "/a}b", "/a?b c", "/a?b\r", "/a?caf\u{e9}", "/a?x\\y"])
    func invalidRequestTargetIsRejected(target: String) {
        #expect(PathNormalizer.normalize(target) == nil)
    }

    // docs/security.md P16
    @Test func queryIsSplitAtTheFirstQuestionMarkAndKeptVerbatim() throws {
        let normalized = try #require(PathNormalizer.normalize("/admin?/public"))
        #expect(normalized.path == "/admin")
        #expect(normalized.query == "/public")
        #expect(normalized.requestURI == "/admin?/public")

        let messy = try #require(PathNormalizer.normalize("/a/./b/%7e?x=%2e%2e/../&y=?z%zz"))
        #expect(messy.path == "/a/b/~")
        #expect(messy.query == "x=%2e%2e/../&y=?z%zz")
        #expect(messy.requestURI == "/a/b/~?x=%2e%2e/../&y=?z%zz")
    }

    @Test func emptyQueryIsKept() throws {
        let normalized = try #require(PathNormalizer.normalize("/a?"))
        #expect(normalized.path == "/a")
        #expect(normalized.query == "")
        #expect(normalized.requestURI == "/a?")
    }

    @Test(arguments: ["/admin#/public", "/admin#", "/#", "/a?b#c", "/a/../b#x"])
    func fragmentIsRejected(target: String) {
        #expect(PathNormalizer.normalize(target) == nil)
    }

    @Test func encodedHashStaysEncodedAsData() {
        #expect(path("/admin%23/public") == "/admin%23/public")
        #expect(path("/admin%23") == "/admin%23")
    }

    @Test func normalizingIsIdempotent() throws {
        for target in ["/a/./b/../c//d/%7e%2f%c3%a9;x/", "/%2e%2e/x", "/x/y/..", "/a%20b"] {
            let once = try #require(path(target))
            #expect(path(once) == once)
        }
    }
}
