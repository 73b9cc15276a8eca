import Foundation
@testable import Gatehouse
import NIOCore
import NIOHTTP1
import Testing
import GatehouseSyntax
import GatehouseConfig
import GatehouseTokens
import GatehouseAuth
import GatehouseExchange
import GatehouseProxy
import GatehouseExtAuthz
import GatehouseVocabulary

/// docs/security.md, the P rows (reverse-proxy cases), end to end through the real listener, judged by what the echo upstream received:
/// identity headers only Gatehouse can set, one canonical path for decision and forward, malformed
/// and smuggling framings refused with 400 before anything is forwarded.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct ProxyAttackTests {
    /// A public `/public` route, everything else required (the default); plus a configured identity
    /// header whose name does not start with `X-Auth-`.
    static func publicPrefix(_ configuration: inout Configuration, _ jwks: TestJWKSServer) {
        var route = RouteSettings(match: .prefix("/public"))
        route.auth = .public
        configuration.routes = [route]
        configuration.headers.mappings.append(HeaderMapping(name: "X-User-Email", claimPath: "email"))
    }

    static func validToken(_ claims: [String: JSONValue] = Claims.valid()) -> String {
        TestSigner.ec.token(claims: claims)
    }

    /// The name as upstream stacks that read `_` as `-` see it.
    static func folded(_ name: String) -> String {
        name.lowercased().replacingOccurrences(of: "_", with: "-")
    }

    static let spoofedHeaders: [(String, String)] = [
        ("X-Auth-Subject", "admin"), ("x-auth-anything", "1"), ("X-AUTH-SUBJECT", "root"), ("X_Auth_Subject", "admin"),
        ("X-Auth_Subject", "admin"), ("x_auth_email", "boss@corp.example"), ("X-Auth-Provider", "evil"), ("X-Auth-Claims", "e30"),
        ("X-Auth-Guest", "true"), ("X-Auth-Email-Verified", "true"), ("X-User-Email", "boss@corp.example"),
        ("X_User_Email", "boss@corp.example"), ("x-user-email", "boss@corp.example"),
    ]

    // MARK: - Identity headers (P01-P05)

    /// P01-P04: every `X-Auth-*` spelling and every configured identity name is removed, on public and protected routes.
    @Test func spoofedIdentityHeadersAreRemovedOnEveryRoute() async throws {
        try await TestEnvironment.run(configure: Self.publicPrefix) { (env: TestEnvironment) async throws in
            let isIdentity = { (name: String) in Self.folded(name).hasPrefix("x-auth-") || Self.folded(name) == "x-user-email" }

            #expect(try await env.request("/public/page", headers: Self.spoofedHeaders).status == 200)
            let anonymous = try #require(env.upstream.last)
            #expect(anonymous.uri == "/public/page")
            #expect(anonymous.headers.filter { isIdentity($0.0) }.isEmpty, "\(anonymous.headers.filter { isIdentity($0.0) })")

            #expect(try await env.request("/v1/orders", token: Self.validToken(), headers: Self.spoofedHeaders).status == 200)
            let verified = try #require(env.upstream.last)
            let identity = verified.headers.filter { isIdentity($0.0) }
            // Only Gatehouse's own spellings arrive, each once, with the verified value.
            #expect(!identity.contains { $0.0.contains("_") })
            #expect(verified.values("x-auth-subject") == ["user-1"])
            #expect(verified.values("x-auth-email") == ["ada@example.com"])
            #expect(verified.values("x-user-email") == ["ada@example.com"])
            #expect(verified.values("x-auth-email-verified") == ["true"])
            #expect(verified.values("x-auth-provider") == ["test"])
            #expect(verified.values("x-auth-claims").count == 1)
            #expect(verified.values("x-auth-claims") != ["e30"])
            #expect(verified.values("x-auth-guest").isEmpty)
            #expect(verified.values("x-auth-anything").isEmpty)
            let names = Set(identity.map { Self.folded($0.0) })
            #expect(names == ["x-auth-subject", "x-auth-email", "x-user-email", "x-auth-email-verified", "x-auth-provider", "x-auth-claims"])
        }
    }

    /// P05: `Connection` naming identity or forwarding headers cannot strip what Gatehouse adds.
    @Test func connectionHeaderCannotRemoveInjectedHeaders() async throws {
        try await TestEnvironment.run(configure: Self.publicPrefix) { (env: TestEnvironment) async throws in
            let request = "GET /v1/orders HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(Self.validToken())\r\n"
                + "Connection: close, X-Auth-Subject, X-Auth-Email, X-User-Email, X-Auth-Provider, X-Auth-Claims, X-Forwarded-For, X-Request-Id\r\n"
                + "X-Auth-Subject: admin\r\n\r\n"
            #expect(env.sendRaw(request) == [200])
            let received = try #require(env.upstream.last)
            #expect(received.values("x-auth-subject") == ["user-1"])
            #expect(received.values("x-auth-email") == ["ada@example.com"])
            #expect(received.values("x-user-email") == ["ada@example.com"])
            #expect(received.values("x-auth-provider") == ["test"])
            #expect(received.values("x-auth-claims").count == 1)
            #expect(received.values("x-forwarded-for") == ["127.0.0.1"])
            #expect(received.values("x-request-id").count == 1)
        }
    }

    // MARK: - Malformed requests (P06-P12, P18-P19)

    /// P06: a space before the colon, obs-fold, a bare CR, a line without colon.
    @Test func malformedHeaderLinesGet400() async throws {
        try await TestEnvironment.run(configure: ForwardingTests.publicEverywhere) { (env: TestEnvironment) async throws in
            let heads = [
                "GET /x HTTP/1.1\r\nHost: a\r\nX-Auth-Subject : admin\r\n\r\n",
                "GET /x HTTP/1.1\r\nHost : a\r\n\r\n",
                "GET /x HTTP/1.1\r\nHost: a\r\nX-Test: a\r\n X-Auth-Subject: admin\r\n\r\n",
                "GET /x HTTP/1.1\r\nHost: a\r\nX-Test: a\r\n\tcontinued\r\n\r\n",
                "GET /x HTTP/1.1\r\n Host: a\r\n\r\n",
                "GET /x HTTP/1.1\r\nHost: a\r\nX-Test: a\rX-Auth-Subject: admin\r\n\r\n",
                "GET /x HTTP/1.1\r\nHost: a\rX-Test: b\r\n\r\n",
                "GET /x HTTP/1.1\r\nHost: a\r\nX-Test\r\n\r\n",
                "GET /x HTTP/1.1\r\nHost: a\r\nX Test: a\r\n\r\n",
            ]
            for head in heads {
                #expect(env.sendRaw(head) == [400], "\(head.debugDescription)")
                try await env.expectNothingReachedUpstream("\(head.debugDescription)")
            }
            #expect(try await env.request("/x").status == 200)
        }
    }

    /// P07-P10: CL+TE, obfuscated Transfer-Encoding, conflicting Content-Length, chunk-size overflow: one 400 and
    /// nothing upstream, so the smuggled request behind them is never seen as a second request.
    @Test func requestSmugglingFramingsGet400AndNothingReachesUpstream() async throws {
        try await TestEnvironment.run(configure: ForwardingTests.publicEverywhere) { (env: TestEnvironment) async throws in
            let smuggled = "GET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n"
            let chunkedBody = "0\r\n\r\n"
            let requests = [
                // P07: CL + TE, both orders.
                "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n\(chunkedBody)\(smuggled)",
                "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 40\r\n\r\n\(chunkedBody)\(smuggled)",
                // P08: Transfer-Encoding obfuscations.
                "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: xchunked\r\n\r\n\(chunkedBody)\(smuggled)",
                "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding:  chunked\r\n\r\n\(chunkedBody)\(smuggled)",
                "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding : chunked\r\n\r\n\(chunkedBody)\(smuggled)",
                "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nX-Test: a\r\n Transfer-Encoding: chunked\r\n\r\n\(chunkedBody)\(smuggled)",
                "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: \u{0B}chunked\r\n\r\n\(chunkedBody)\(smuggled)",
                "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, identity\r\n\r\n\(chunkedBody)\(smuggled)",
                "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: x\r\n\r\n\(chunkedBody)\(smuggled)",
                "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity\r\n\r\n\(chunkedBody)\(smuggled)",
                // P09: two Content-Lengths, or one that is not a plain number.
                "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 40\r\n\r\nhello\(smuggled)",
                "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 40\r\n\r\nhello\(smuggled)",
                "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\nhello\(smuggled)",
                "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\nhello\(smuggled)",
                "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 0x5\r\n\r\nhello\(smuggled)",
            ]
            for request in requests {
                #expect(env.sendRaw(request) == [400], "\(request.debugDescription)")
                try await env.expectNothingReachedUpstream("\(request.debugDescription)")
            }
            // P10: chunk sizes that overflow or are not hex. The head is sound, so on a public route it may be on
            // its way upstream (streamed) when the body turns out broken: the upstream connection carrying it is
            // closed, so no request is ever completed there, and the smuggled one is never seen.
            let brokenBodies = [
                "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\nabc\r\n0\r\n\r\n\(smuggled)",
                "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000001\r\nabc\r\n0\r\n\r\n\(smuggled)",
                "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\nabc\r\n0\r\n\r\n\(smuggled)",
            ]
            for request in brokenBodies {
                #expect(env.sendRaw(request) == [400], "\(request.debugDescription)")
                _ = try env.upstream.settledTraffic()
                #expect(env.upstream.requestCount == 0, "\(request.debugDescription)")
            }
            for _ in 0..<500 where env.upstream.traffic.unfinishedOpen > 0 { try await Task.sleep(for: .milliseconds(10)) }
            #expect(env.upstream.traffic.unfinishedOpen == 0, "a connection holding a half request stays open: \(env.upstream.traffic)")
            #expect(!env.upstream.requests.contains { $0.uri == "/smuggled" })
            // Control: the same smuggled bytes behind an honest body are just the next pipelined request.
            let honest = "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello"
                + "GET /smuggled HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
            #expect(env.sendRaw(honest) == [200, 200])
        }
    }

    /// P12: CR, LF, NUL and other controls in the request target or method.
    @Test func controlCharactersInTargetOrMethodGet400() async throws {
        try await TestEnvironment.run(configure: ForwardingTests.publicEverywhere) { (env: TestEnvironment) async throws in
            let requestLines = [
                "GET /a\rb HTTP/1.1", "GET /a\nb HTTP/1.1", "GET /a\u{0}b HTTP/1.1", "GET /a\u{1}b HTTP/1.1", "GET /a\u{1B}[2Jb HTTP/1.1",
                "GET /a\u{7F}b HTTP/1.1", "GET /a\tb HTTP/1.1", "GET /a b HTTP/1.1", "GET /caf\u{E9} HTTP/1.1", "GET /a\u{202E}b HTTP/1.1",
                "G\u{1}T /x HTTP/1.1", "GE\rT /x HTTP/1.1", "GET\t/x HTTP/1.1", "GET\u{0}/x HTTP/1.1", "GET /x\r HTTP/1.1",
            ]
            for line in requestLines {
                #expect(env.sendRaw("\(line)\r\nHost: a\r\nConnection: close\r\n\r\n") == [400], "\(line.debugDescription)")
                try await env.expectNothingReachedUpstream("\(line.debugDescription)")
            }
            #expect(try await env.request("/x").status == 200)
        }
    }

    /// P33: bare LF line endings in a request head, throughout or mixed with CRLF at any line: 400 from the decoder,
    /// the connection closed, nothing upstream and no failure-log line (a 400 is not an authentication failure).
    @Test func bareLineFeedLineEndingsGet400AndClose() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            let authorization = "Authorization: Bearer \(Self.validToken())"
            let heads = [
                "GET /v1/orders HTTP/1.1\nHost: a\n\n",
                "GET /v1/orders HTTP/1.1\nHost: a\n\(authorization)\n\n",
                "GET /v1/orders HTTP/1.1\nHost: a\r\n\(authorization)\r\n\r\n",
                "GET /v1/orders HTTP/1.1\r\nHost: a\n\(authorization)\r\n\r\n",
                "GET /v1/orders HTTP/1.1\r\nHost: a\r\n\(authorization)\n\r\n",
                "GET /v1/orders HTTP/1.1\r\nHost: a\r\n\(authorization)\r\n\n",
                "GET /v1/orders HTTP/1.1\r\nHost: a\r\n\n",
            ]
            for head in heads {
                let connection = try #require(RawHTTP.Connection(port: env.port, timeout: .seconds(3)))
                let started = ContinuousClock.now
                connection.send(head)
                let text = connection.receive()
                #expect(RawHTTP.statuses(text) == [400], "\(head.debugDescription): \(text.debugDescription)")
                // The decoder's refusal (4.6): empty, `Connection: close`, no request id.
                #expect(text.contains("\r\nContent-Length: 0\r\n") && text.contains("\r\nConnection: close\r\n"), "\(text.debugDescription)")
                #expect(!text.lowercased().contains("x-request-id"), "\(text.debugDescription)")
                #expect(ContinuousClock.now - started < .seconds(2), "closed by the server: \(head.debugDescription)")
                try await env.expectNothingReachedUpstream("\(head.debugDescription)")
            }
            #expect(env.failureLog.isEmpty, "\(env.failureLogLines)")
            // Control: the same heads with CRLF throughout are a 401 and a 200.
            #expect(env.sendRaw("GET /v1/orders HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n") == [401])
            #expect(env.sendRaw("GET /v1/orders HTTP/1.1\r\nHost: a\r\n\(authorization)\r\nConnection: close\r\n\r\n") == [200])
            #expect(env.upstream.requestCount == 1)
        }
    }

    /// P18-P19: absolute-form and authority-form targets, missing, duplicate or odd Host.
    @Test func absoluteFormAndBadHostGet400() async throws {
        try await TestEnvironment.run(configure: ForwardingTests.publicEverywhere) { (env: TestEnvironment) async throws in
            let requests = [
                "GET http://evil.example/ HTTP/1.1\r\nHost: a\r\n\r\n",
                "GET https://169.254.169.254/latest/meta-data/ HTTP/1.1\r\nHost: 169.254.169.254\r\n\r\n",
                "CONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\n\r\n",
                "GET /x HTTP/1.1\r\n\r\n",
                "GET /x HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
                "GET /x HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n",
                "GET /x HTTP/1.1\r\nHost: a/admin\r\n\r\n",
                "GET /x HTTP/1.1\r\nHost: user@evil.example\r\n\r\n",
                "GET /x HTTP/1.1\r\nHost: a b\r\n\r\n",
                "GET /x HTTP/1.1\r\nHost:\r\n\r\n",
            ]
            let badRequestsBefore = try await env.requestCount(routeAuth: "none", outcome: "bad_request")
            for request in requests {
                #expect(env.sendRaw(request) == [400], "\(request.debugDescription)")
                try await env.expectNothingReachedUpstream("\(request.debugDescription)")
            }
            // Absolute form is refused even naming our own host: routes match origin-form paths only.
            #expect(env.sendRaw("GET http://127.0.0.1/x HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n") == [400])
            try await env.expectNothingReachedUpstream()
            // Each is a refused target or Host (the parser accepted the syntax), counted as bad_request.
            #expect(try await env.requestCount(routeAuth: "none", outcome: "bad_request") == badRequestsBefore + Double(requests.count + 1))
        }
    }

    // MARK: - Claim values (P13, P14)

    /// P13: CR, LF, NUL, bidi overrides, emoji and `%` in claims arrive percent-encoded: visible ASCII only,
    /// and percent-decoding gives back the claim exactly.
    @Test func hostileClaimValuesArriveDeterministicallyEncoded() async throws {
        try await TestEnvironment.run(configure: Self.publicPrefix) { (env: TestEnvironment) async throws in
            let claims: [String: String] = [
                "sub": "user-1\r\nX-Injected: yes",
                "email": "ada@example.com\nX-Evil: 1",
                "name": "Ada\u{0}\u{202E}nosaJ \u{1F600} 100%",
                "picture": " https://example.com/\u{7F}\u{1B}[0m ",
            ]
            let token = Self.validToken(Claims.valid(extra: claims.mapValues { .string($0) }))
            #expect(try await env.request("/v1/orders", token: token).status == 200)
            let received = try #require(env.upstream.last)
            let headerOf = ["sub": "x-auth-subject", "email": "x-auth-email", "name": "x-auth-name", "picture": "x-auth-picture"]
            for (claim, original) in claims {
                let values = received.values(try #require(headerOf[claim]))
                #expect(values.count == 1, "\(claim)")
                let value = try #require(values.first)
                #expect(value.unicodeScalars.allSatisfy { (0x20...0x7E).contains($0.value) }, "\(claim): \(value.debugDescription)")
                #expect(value.removingPercentEncoding == original, "\(claim): \(value.debugDescription)")
            }
            #expect(received.values("x-user-email") == received.values("x-auth-email"))
            #expect(received.value("x-auth-subject")?.lowercased() == "user-1%0d%0ax-injected: yes")
            #expect(received.value("x-injected") == nil)
            #expect(received.value("x-evil") == nil)
            // X-Auth-Claims carries the verified payload itself, base64url: nothing to inject.
            let encoded = try #require(received.value("x-auth-claims"))
            let payload = try StrictJSON.parse(try #require(Base64URL.decode(Array(encoded.utf8)))).objectValue
            #expect(payload?["sub"] == .string("user-1\r\nX-Injected: yes"))
            // Deterministic: the same claims give the same header values.
            let again = Self.validToken(Claims.valid(subject: "user-1\r\nX-Injected: yes", extra: ["jti": .string("2")]))
            #expect(try await env.request("/v1/orders", token: again).status == 200)
            #expect(env.upstream.last?.value("x-auth-subject") == received.value("x-auth-subject"))
        }
    }

    /// P14: `email_verified: false` is forwarded as "false", the email is not identity, and a route that
    /// needs a verified email refuses it.
    @Test func unverifiedEmailIsForwardedAsTheClaimSays() async throws {
        try await TestEnvironment.run(configure: { configuration, jwks in
            Self.publicPrefix(&configuration, jwks)
            var verified = RouteSettings(match: .prefix("/verified"))
            verified.requireEmailVerified = true
            configuration.routes.insert(verified, at: 0)
        }) { (env: TestEnvironment) async throws in
            let unverified = Self.validToken(Claims.valid(extra: ["email_verified": .bool(false)]))
            #expect(try await env.request("/v1/orders", token: unverified).status == 200)
            let received = try #require(env.upstream.last)
            #expect(received.values("x-auth-email-verified") == ["false"])
            #expect(received.values("x-auth-email") == ["ada@example.com"])
            #expect(received.values("x-auth-subject") == ["user-1"])
            let appleStyle = Self.validToken(Claims.valid(extra: ["email_verified": .string("false")]))
            #expect(try await env.request("/v1/orders", token: appleStyle).status == 200)
            #expect(env.upstream.last?.values("x-auth-email-verified") == ["false"])
            var noEmail = Claims.valid()
            noEmail["email"] = nil
            noEmail["email_verified"] = nil
            #expect(try await env.request("/v1/orders", token: Self.validToken(noEmail)).status == 200)
            #expect(env.upstream.last?.value("x-auth-email") == nil)
            #expect(env.upstream.last?.value("x-auth-email-verified") == nil)
            #expect(env.upstream.last?.value("x-user-email") == nil)

            let count = env.upstream.requestCount
            let refused = try await env.request("/verified", token: unverified)
            #expect(refused.status == 403)
            #expect(refused.json?["reason"] == .string("forbidden"))
            #expect(env.upstream.requestCount == count)
            #expect(try await env.request("/verified", token: Self.validToken()).status == 200)
        }
    }

    // MARK: - Routing (P15-P17)

    /// P15: dot segments, escapes and `//` are resolved once; the decision and the forward use that one path,
    /// and what has no single reading is 400.
    @Test func pathIsCanonicalForBothDecisionAndForward() async throws {
        try await TestEnvironment.run(configure: Self.publicPrefix) { (env: TestEnvironment) async throws in
            let token = Self.validToken()
            let cases: [(target: String, withoutToken: Int, forwardedAs: String?)] = [
                ("/public/../admin", 401, "/admin"),
                ("/%2e%2e/admin", 401, "/admin"),
                ("/public/%2e%2e/admin", 401, "/admin"),
                ("/public/%2E%2E/admin", 401, "/admin"),
                ("/public/.%2e/admin", 401, "/admin"),
                ("/public/./../admin", 401, "/admin"),
                ("/public/x/../../admin", 401, "/admin"),
                ("//admin", 401, "/admin"),
                ("/./admin", 401, "/admin"),
                ("/admin;x", 401, "/admin;x"),
                ("/public/..;/admin", 400, nil),
                ("/public/..;x/admin", 400, nil),
                ("/public/..%3B/admin", 400, nil),
                ("/public/..%2Fadmin", 400, nil),
                ("/public%2F..%2Fadmin", 400, nil),
                ("/public/%5C../admin", 400, nil),
                ("/public/%5c..%5cadmin", 400, nil),
                ("/public\\..\\admin", 400, nil),
                ("/public/%00/../admin", 400, nil),
                ("/public/%zz/../admin", 400, nil),
                ("/public/%2", 400, nil),
                // Toward the public route: admitted without a token, and forwarded as the path it was judged as.
                ("/admin/../public", 200, "/public"),
                ("/admin/%2e%2e/public/x", 200, "/public/x"),
                ("/%70ublic/x", 200, "/public/x"),
                ("//public//x", 200, "/public/x"),
                ("/public/./x", 200, "/public/x"),
                // Judged as the upstream will read them: `;` parameters ignored, `%2F` a boundary; forwarded as sent.
                ("/public;x", 200, "/public;x"),
                ("/public%2Fadmin", 200, "/public%2Fadmin"),
                ("/public%2fadmin", 200, "/public%2Fadmin"),
                ("/public;x/../admin", 401, "/admin"),
                ("/publicity", 401, "/publicity"),
            ]
            for (target, withoutToken, forwardedAs) in cases {
                let before = env.upstream.requestCount
                let trafficBefore = env.upstream.traffic
                #expect(env.rawStatus(of: target) == withoutToken, "\(target) without a token")
                switch withoutToken {
                case 200:
                    #expect(env.upstream.requestCount == before + 1, "\(target)")
                    #expect(env.upstream.last?.uri == forwardedAs, "\(target) forwarded")
                    #expect(env.upstream.last?.value("x-auth-subject") == nil, "\(target)")
                case 401:
                    try await env.expectNothingReachedUpstream(since: trafficBefore, "\(target) reached the upstream without a token")
                    #expect(env.rawStatus(of: target, token: token) == 200, "\(target) with a token")
                    #expect(env.upstream.last?.uri == forwardedAs, "\(target) forwarded")
                default:
                    #expect(env.rawStatus(of: target, token: token) == withoutToken, "\(target) with a token")
                    try await env.expectNothingReachedUpstream(since: trafficBefore, "\(target) reached the upstream")
                }
            }
        }
    }

    /// P16: the query and anything after `#` or `%23` never take part in routing.
    @Test func queryAndFragmentNeverChooseTheRoute() async throws {
        try await TestEnvironment.run(configure: Self.publicPrefix) { (env: TestEnvironment) async throws in
            #expect(env.rawStatus(of: "/admin?/public") == 401)
            #expect(env.rawStatus(of: "/admin?x=/public/../public") == 401)
            #expect(env.rawStatus(of: "/admin%23/public") == 401)
            #expect(env.rawStatus(of: "/admin#/public") == 400, "a raw # is refused by the request parser")
            try await env.expectNothingReachedUpstream()
            let token = Self.validToken()
            #expect(env.rawStatus(of: "/admin?/public", token: token) == 200)
            #expect(env.upstream.last?.uri == "/admin?/public")
            #expect(env.rawStatus(of: "/admin%23/public", token: token) == 200)
            #expect(env.upstream.last?.uri == "/admin%23/public")
            #expect(env.rawStatus(of: "/public?/admin") == 200)
            #expect(env.upstream.last?.uri == "/public?/admin")
        }
    }

    /// P17: rewrite headers on the proxy port never change the decision.
    @Test func rewriteHeadersNeverChangeTheDecision() async throws {
        try await TestEnvironment.run(configure: Self.publicPrefix) { (env: TestEnvironment) async throws in
            let rewrites = ["X-Original-URL", "X-Rewrite-URL", "X-Forwarded-Uri", "X-Original-URI", "X-Forwarded-Path", "X-Forwarded-Prefix"]
            for name in rewrites {
                let response = try await env.request("/admin", headers: [(name, "/public")])
                #expect(response.status == 401, "\(name)")
                #expect(response.json?["reason"] == .string("missing_token"), "\(name)")
            }
            let all = rewrites.map { ($0, "/public") } + [("X-Forwarded-Method", "GET"), ("X-HTTP-Method-Override", "OPTIONS")]
            #expect(try await env.request("/admin", headers: all).status == 401)
            try await env.expectNothingReachedUpstream()
            #expect(env.failureLog.count == rewrites.count + 1)
        }
    }

    // MARK: - Forwarding metadata (P20)

    /// P20: the client's `X-Forwarded-For` is kept as a claim of the client, the peer appended, and never
    /// taken as the client address.
    @Test func clientForwardedForGetsThePeerAppended() async throws {
        try await TestEnvironment.run(configure: Self.publicPrefix) { (env: TestEnvironment) async throws in
            let token = Self.validToken()
            #expect(try await env.request("/v1/orders", token: token, headers: [("X-Forwarded-For", "1.2.3.4")]).status == 200)
            #expect(env.upstream.last?.values("x-forwarded-for") == ["1.2.3.4, 127.0.0.1"])
            let twice = [("X-Forwarded-For", "1.2.3.4"), ("X-Forwarded-For", "5.6.7.8")]
            #expect(try await env.request("/v1/orders", token: token, headers: twice).status == 200)
            #expect(env.upstream.last?.values("x-forwarded-for") == ["1.2.3.4, 5.6.7.8, 127.0.0.1"])
            // Failures are logged with the peer, not the claimed client.
            let spoofed = [("X-Forwarded-For", "1.2.3.4"), ("X-Real-IP", "1.2.3.4"), ("Forwarded", "for=1.2.3.4")]
            #expect(try await env.request("/v1/orders", headers: spoofed).status == 401)
            #expect(env.failureLog.last?["client_ip"] == .string("127.0.0.1"))
        }
    }

    // MARK: - Authentication on every request (P21, P22)

    /// P21: OPTIONS, HEAD and health-check user agents are authenticated like everything else.
    @Test func preflightsAndProbesAreStillAuthenticated() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            let preflight = [("Origin", "https://app.example"), ("Access-Control-Request-Method", "DELETE")]
            #expect(try await env.request("/v1/orders", method: .OPTIONS).status == 401)
            #expect(try await env.request("/v1/orders", method: .OPTIONS, headers: preflight).status == 401)
            #expect(try await env.request("/v1/orders", method: .HEAD).status == 401)
            for agent in ["kube-probe/1.29", "ELB-HealthChecker/2.0", "GoogleHC/1.0", "Consul Health Check", "Envoy/HC"] {
                #expect(try await env.request("/v1/orders", headers: [("User-Agent", agent)]).status == 401, "\(agent)")
            }
            try await env.expectNothingReachedUpstream()
        }
    }

    /// P21: with `bypass_cors_preflight`, only a real preflight passes, and without identity headers.
    @Test func configuredPreflightBypassForwardsWithoutIdentity() async throws {
        try await TestEnvironment.run(configure: { configuration, _ in
            configuration.verification.bypassCORSPreflight = true
        }) { (env: TestEnvironment) async throws in
            let preflight = [("Origin", "https://app.example"), ("Access-Control-Request-Method", "DELETE")]
            let response = try await env.request("/v1/orders", method: .OPTIONS, headers: preflight + Self.spoofedHeaders)
            #expect(response.status == 200)
            let received = try #require(env.upstream.last)
            #expect(received.method == "OPTIONS")
            #expect(!received.headers.contains { Self.folded($0.0).hasPrefix("x-auth-") })
            #expect(env.failureLog.isEmpty)
            #expect(try await env.request("/v1/orders", method: .OPTIONS, headers: [preflight[0]]).status == 401)
            #expect(try await env.request("/v1/orders", method: .OPTIONS, headers: [preflight[1]]).status == 401)
            #expect(try await env.request("/v1/orders", method: .GET, headers: preflight).status == 401)
            #expect(try await env.request("/v1/orders", method: .POST, headers: preflight).status == 401)
            #expect(env.upstream.requestCount == 1)
        }
    }

    /// P22: on an optional route a bad token is a 401, never a guest.
    @Test func optionalRouteWithUnknownIssuerTokenIsRejectedNotGuest() async throws {
        try await TestEnvironment.run(configure: { configuration, _ in
            var route = RouteSettings(match: .prefix("/v1/events"))
            route.auth = .optional
            configuration.routes = [route]
        }) { (env: TestEnvironment) async throws in
            let unknownIssuer = Self.validToken(Claims.valid(extra: ["iss": .string("https://attacker.example")]))
            try await env.expectAttackRejected(token: unknownIssuer, reasons: [.unknownIssuer], path: "/v1/events")
            try await env.expectAttackRejected(token: "not-a-token", reasons: [.malformedToken], path: "/v1/events")
            try await env.expectAttackRejected(
                token: Self.validToken(Claims.valid(lifetime: -3600)), reasons: [.expired], path: "/v1/events")
            #expect(!env.upstream.requests.contains { $0.value("x-auth-guest") != nil })
            #expect(try await env.request("/v1/events").status == 200)
            #expect(env.upstream.last?.value("x-auth-guest") == "true")
        }
    }

    // MARK: - Resource exhaustion (P23-P25)

    /// P23: one huge header, or very many small ones: 431 (or 400), and the server keeps serving.
    @Test func hugeOrManyHeadersAreRefusedAndTheServerKeepsServing() async throws {
        try await TestEnvironment.run(configure: ForwardingTests.publicEverywhere) { (env: TestEnvironment) async throws in
            let big = String(repeating: "a", count: 100 * 1024)
            #expect(env.sendRaw("GET /x HTTP/1.1\r\nHost: a\r\nX-Big: \(big)\r\n\r\n") == [431])
            let many = String(repeating: "X-A: b\r\n", count: 70_000)
            let statuses = env.sendRaw("GET /x HTTP/1.1\r\nHost: a\r\n\(many)\r\n")
            #expect(statuses == [431] || statuses == [400], "\(statuses)")
            try await env.expectNothingReachedUpstream()
            #expect(try await env.request("/x").status == 200)
        }
    }

    /// P24: a huge body without a token is answered 401 from the head alone, and the connection is closed
    /// rather than read to the end.
    @Test func bigBodyWithoutTokenIs401BeforeTheBodyIsRead() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            let connection = try #require(RawHTTP.Connection(port: env.port, timeout: .seconds(3)))
            let started = ContinuousClock.now
            connection.send("POST /v1/orders HTTP/1.1\r\nHost: a\r\nContent-Length: 104857600\r\nContent-Type: application/octet-stream\r\n\r\n")
            connection.send([UInt8](repeating: 0x61, count: 1024))
            let text = connection.receive(until: "\"request_id\"")
            #expect(RawHTTP.statuses(text) == [401])
            #expect(text.contains("\"reason\":\"missing_token\""))
            #expect(ContinuousClock.now - started < .seconds(2))
            // The rest of the 100 MB is never waited for: the server closes the connection.
            let rest = connection.receive()
            #expect(ContinuousClock.now - started < .seconds(2))
            #expect(!rest.contains("HTTP/1.1"))
            // With `Expect: 100-continue`, the client is told 401 instead of "continue".
            let expecting = try #require(RawHTTP.Connection(port: env.port, timeout: .seconds(3)))
            expecting.send("POST /v1/orders HTTP/1.1\r\nHost: a\r\nContent-Length: 104857600\r\nExpect: 100-continue\r\n\r\n")
            #expect(RawHTTP.statuses(expecting.receive(until: "\"request_id\"")) == [401])
            try await env.expectNothingReachedUpstream()
            #expect(env.failureLog.map { $0["reason"] } == [.string("missing_token"), .string("missing_token")])
            #expect(try await env.request("/v1/orders", token: Self.validToken()).status == 200)
        }
    }

    /// P25: stalled heads and stalled bodies hold no more than their own connection: other clients are served
    /// while 50 of them hang. (`idleStallsAreClosed` shows them freed by `idle_timeout`.)
    @Test func stalledConnectionsDoNotStopOtherClients() async throws {
        try await TestEnvironment.run(configure: Self.publicPrefix) { (env: TestEnvironment) async throws in
            var heads: [RawHTTP.Connection] = []
            var bodies: [RawHTTP.Connection] = []
            for _ in 0..<25 {
                let head = try #require(RawHTTP.Connection(port: env.port, timeout: .milliseconds(200)))
                head.send("GET /v1/orders HTTP/1.1\r\nHost: a\r\nX-Slow: ")
                heads.append(head)
                let body = try #require(RawHTTP.Connection(port: env.port, timeout: .seconds(3)))
                body.send("POST /public/upload HTTP/1.1\r\nHost: a\r\nContent-Length: 100000\r\n\r\nfirst bytes")
                bodies.append(body)
            }
            let token = Self.validToken()
            for _ in 0..<10 {
                let started = ContinuousClock.now
                #expect(try await env.request("/v1/orders", token: token).status == 200)
                #expect(try await env.request("/public/page").status == 200)
                #expect(ContinuousClock.now - started < .seconds(3), "a stalled connection must not hold up others")
            }
            // None of the stalled requests was completed upstream.
            #expect(!env.upstream.requests.contains { $0.uri == "/public/upload" })
            // Half heads are not answered (`idle_timeout`, 60 s by default, frees them); stalled bodies meet the upstream
            // timeout (800 ms here): 504, and the connection is closed.
            for head in heads.prefix(3) { #expect(head.receive().isEmpty) }
            // (Each connection's socket timeout is 3 s: a 504 read here came from the upstream timeout.)
            for body in bodies.prefix(3) { #expect(RawHTTP.statuses(body.receive()) == [504]) }
        }
    }

    /// P25: `[listen] idle_timeout` closes a connection whose client stops sending: half a request
    /// head, nothing after a response (keep-alive), a streamed body that stops, a sign-out body that
    /// never comes. Each is closed unanswered within about the timeout; the upstream gets nothing.
    @Test func idleStallsAreClosed() async throws {
        try await TestEnvironment.run(configure: { configuration, jwks in
            Self.publicPrefix(&configuration, jwks)
            configuration.listen.idleTimeout = .milliseconds(400)
            configuration.upstream.timeout = .seconds(10)  // so a stalled body is the client's stall, not a 504
        }) { (env: TestEnvironment) async throws in
            let halfHead = try #require(RawHTTP.Connection(port: env.port, timeout: .seconds(4)))
            halfHead.send("GET /public/page HTTP/1.1\r\nHost: a\r\nX-Slow: ")
            let keptAlive = try #require(RawHTTP.Connection(port: env.port, timeout: .seconds(4)))
            keptAlive.send("GET /public/page HTTP/1.1\r\nHost: a\r\n\r\n")
            #expect(RawHTTP.statuses(keptAlive.receive(until: "ok")) == [200])
            let stalledBody = try #require(RawHTTP.Connection(port: env.port, timeout: .seconds(4)))
            stalledBody.send("POST /public/upload HTTP/1.1\r\nHost: a\r\nContent-Length: 100000\r\n\r\nfirst bytes")
            let signOut = try #require(RawHTTP.Connection(port: env.port, timeout: .seconds(4)))
            signOut.send("POST /.gatehouse/signout HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(Self.validToken())\r\n"
                + "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
            let started = ContinuousClock.now
            for connection in [halfHead, keptAlive, stalledBody, signOut] {
                #expect(connection.receive().isEmpty, "closed without an answer")
            }
            #expect(ContinuousClock.now - started < .seconds(3.5), "closed by idle_timeout, not by the 4 s socket timeout")
            #expect(!env.upstream.requests.contains { $0.uri == "/public/upload" })
            // The sign-out never completed: the token still works.
            #expect(try await env.request("/v1/orders", token: Self.validToken()).status == 200)
        }
    }

    /// P46: a client pipelining more than 1024 request parts (a GET is two: head and end) behind the request being
    /// answered is cut off: the connection is closed, far fewer than the requests sent reach the upstream, what was
    /// answered was answered in order, and other connections are served. Control: 400 pipelined requests (800
    /// parts) on one connection are all answered, in order.
    @Test func morePipelinedPartsThanTheCapCloseTheConnection() async throws {
        try await TestEnvironment.run(configure: Self.publicPrefix) { (env: TestEnvironment) async throws in
            /// The `n` of every `/public/n` the echo upstream answered, in the order the answers arrived.
            func answered(_ text: String) -> [Int] {
                text.components(separatedBy: "\"uri\":\"/public/").dropFirst().compactMap { Int($0.prefix { $0.isNumber }) }
            }
            func pipelined(_ count: Int, closeLast: Bool) -> String {
                (0..<count).map { index in
                    "GET /public/\(index) HTTP/1.1\r\nHost: a\r\n\(closeLast && index == count - 1 ? "Connection: close\r\n" : "")\r\n"
                }.joined()
            }

            let control = try #require(RawHTTP.Connection(port: env.port, timeout: .seconds(3)))
            control.send(pipelined(400, closeLast: true))
            let controlText = control.receive()
            #expect(RawHTTP.statuses(controlText).count == 400)
            #expect(answered(controlText) == Array(0..<400))
            #expect(env.upstream.requestCount == 400)
            env.upstream.reset()

            let flood = try #require(RawHTTP.Connection(port: env.port, timeout: .seconds(3)))
            let started = ContinuousClock.now
            flood.send(pipelined(1100, closeLast: false))
            let text = flood.receive()
            #expect(ContinuousClock.now - started < .seconds(2), "closed by the server, not by the 3 s socket timeout")
            let statuses = RawHTTP.statuses(text)
            let order = answered(text)
            #expect(statuses.count < 1100)
            // May be empty: the row lets requests already forwarded go unanswered when the connection is cut.
            // Whatever was answered is 200 and in order.
            #expect(statuses.allSatisfy { $0 == 200 }, "\(statuses)")
            #expect(order == Array(0..<statuses.count), "answered in order: \(order)")
            // The queue holds at most 1024 parts (512 GETs) behind the request in flight.
            #expect(env.upstream.requestCount <= 1024)
            #expect(env.upstream.requestCount <= statuses.count + 1 + 512)
            #expect(!env.upstream.requests.contains { $0.uri == "/public/1099" })
            // Other connections are served.
            #expect(try await env.request("/public/after").status == 200)
            #expect(env.sendRaw("GET /v1/orders HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(Self.validToken())\r\nConnection: close\r\n\r\n") == [200])
        }
    }

    // MARK: - Upgrades and redirects (P26, P27)

    /// P26: no upgrade of any kind before authentication; h2c is never tunnelled, even when authenticated.
    @Test func upgradesWithoutTokenAre401BeforeAnyUpgrade() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            let webSocket = "GET /ws HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
            #expect(env.sendRaw(webSocket, timeout: .milliseconds(500)) == [401])
            let h2c = "GET /plain HTTP/1.1\r\nHost: a\r\nUpgrade: h2c\r\nConnection: Upgrade, HTTP2-Settings\r\n"
                + "HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n"
            #expect(env.sendRaw(h2c + "\r\n", timeout: .milliseconds(500)) == [401])
            try await env.expectNothingReachedUpstream()
            let authenticated = h2c + "Authorization: Bearer \(Self.validToken())\r\n\r\n"
            #expect(env.sendRaw(authenticated, timeout: .milliseconds(500)) == [200])
            #expect(env.upstream.last?.value("upgrade") == nil)
            #expect(env.upstream.last?.value("http2-settings") == nil)
        }
    }

    /// P27: an upstream redirect to the cloud metadata address is passed to the client, never followed.
    @Test func upstreamRedirectOnProtectedRouteIsPassedThroughNeverFollowed() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            let response = try await env.request("/redirect", token: Self.validToken())
            #expect(response.status == 302)
            #expect(response.headers.first(name: "location") == "http://169.254.169.254/latest/meta-data/")
            #expect(env.upstream.requestCount == 1)
            #expect(env.upstream.last?.uri == "/redirect")
            #expect(env.failureLog.isEmpty)
        }
    }
}

extension TestEnvironment {
    /// Sends `request` byte for byte on a fresh connection and returns the status of every response received
    /// before the server closed it (or `timeout` passed).
    func sendRaw(_ request: String, timeout: Duration = .seconds(2)) -> [Int] {
        RawHTTP.statuses(RawHTTP.exchange(port: port, request, timeout: timeout))
    }

    /// `GET target` exactly as written (no client-side normalization), optionally with a bearer token: the status.
    func rawStatus(of target: String, token: String? = nil) -> Int? {
        let authorization = token.map { "Authorization: Bearer \($0)\r\n" } ?? ""
        return sendRaw("GET \(target) HTTP/1.1\r\nHost: a\r\n\(authorization)Connection: close\r\n\r\n").first
    }
}
