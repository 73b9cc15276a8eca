import Foundation
@testable import Gatehouse
import GatehouseTokens
import NIOHTTP1
import Testing
import GatehouseSyntax
import GatehouseConfig
import GatehouseAuth
import GatehouseProxy
import GatehouseVocabulary

/// Promises of docs/reference.md that held in a black-box run but that no test guarded (issue 24.6):
/// token forwarding, where the token is read, upstream failures (connect timeout, a stray 101), the
/// decision endpoint's fallbacks, sign-out without `sub`, the size limit on key documents.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct ContractTests {
    static func token(subject: String = "user-1") -> String { TestSigner.ec.token(claims: Claims.valid(subject: subject)) }

    /// One request over a raw connection (fields a client library would not send: empty values).
    static func raw(_ env: TestEnvironment, _ path: String, _ fields: [String]) -> (status: Int?, body: String) {
        let request = "GET \(path) HTTP/1.1\r\nHost: a\r\nConnection: close\r\n" + fields.map { $0 + "\r\n" }.joined() + "\r\n"
        let response = RawHTTP.exchange(port: env.port, request, timeout: .seconds(5))
        let body = response.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n")
        return (RawHTTP.statuses(response).first, body)
    }

    // MARK: - §3.4, §5: [upstream] forward_token = false

    /// `forward_token = false`: neither `Authorization` nor the `token_header` (in any spelling) reaches the
    /// upstream, whichever carried the token; the token cookie still goes inside `Cookie`. A reload back to
    /// `true` forwards `Authorization` again (so the assertions can see it when it is there).
    @Test(arguments: [false, true])
    func forwardTokenFalseWithholdsTheTokenFromTheUpstream(http2Upstream: Bool) async throws {
        try await TestEnvironment.run(upstreamHTTP2: http2Upstream, configure: { configuration, _ in
            configuration.upstream.forwardToken = false
            configuration.verification.tokenHeader = "X-Token"
            configuration.verification.tokenCookie = "gh"
        }) { (env: TestEnvironment) async throws in
            let token = Self.token()
            let sent: [(String, [(String, String)])] = [
                ("authorization", [("Authorization", "Bearer \(token)")]),
                ("token header", [("X-Token", token)]),
                ("token header, other case", [("x-TOKEN", token)]),
                ("authorization and token header", [("Authorization", "Bearer \(token)"), ("X-Token", token)]),
            ]
            for (index, (what, headers)) in sent.enumerated() {
                let response = try await env.request("/v1/orders/\(index)", headers: headers)
                #expect(response.status == 200, "\(what): \(response.body)")
                let received = try #require(env.upstream.requests.first { $0.uri == "/v1/orders/\(index)" }, "\(what) never reached the upstream")
                #expect(received.value("x-auth-subject") == "user-1", "\(what): the request was verified and forwarded")
                #expect(received.values("authorization").isEmpty, "\(what): Authorization reached the upstream: \(received.headers)")
                #expect(received.values("x-token").isEmpty, "\(what): the token header reached the upstream: \(received.headers)")
                #expect(!received.headers.contains { $0.1.contains(token) }, "\(what): the token reached the upstream: \(received.headers)")
            }
            // The cookie is still sent, as it came.
            let cookie = "theme=dark; gh=\(token)"
            #expect(try await env.request("/v1/cookie", headers: [("Cookie", cookie)]).status == 200)
            let viaCookie = try #require(env.upstream.requests.first { $0.uri == "/v1/cookie" })
            #expect(viaCookie.value("x-auth-subject") == "user-1")
            #expect(viaCookie.values("cookie") == [cookie])
            #expect(viaCookie.values("authorization").isEmpty)

            // forward_token applies on reload: back to true, the token goes upstream again.
            var forwarding = env.gatehouse.configuration
            forwarding.upstream.forwardToken = true
            #expect(await env.gatehouse.reload(forwarding).isEmpty)
            #expect(try await env.request("/v1/forwarded", headers: [("Authorization", "Bearer \(token)"), ("X-Token", token)]).status == 200)
            let forwarded = try #require(env.upstream.requests.first { $0.uri == "/v1/forwarded" })
            #expect(forwarded.values("authorization") == ["Bearer \(token)"])
            #expect(forwarded.values("x-token") == [token])
        }
    }

    // MARK: - §4.2: where the token is read

    static func withHeaderAndCookie(_ configuration: inout Configuration, _ jwks: TestJWKSServer) {
        configuration.verification.tokenHeader = "X-Token"
        configuration.verification.tokenCookie = "gh"
    }

    /// Precedence: a bearer `Authorization`, then `token_header`, then `token_cookie` (its first cookie of that
    /// name; an empty value counts as absent). An `Authorization` of another scheme leaves the others read.
    @Test func bearerThenTokenHeaderThenTokenCookieDecideWhichTokenIsJudged() async throws {
        try await TestEnvironment.run(configure: Self.withHeaderAndCookie) { (env: TestEnvironment) async throws in
            let fromAuthorization = Self.token(subject: "from-authorization")
            let fromHeader = Self.token(subject: "from-header")
            let fromCookie = Self.token(subject: "from-cookie")
            let second = Self.token(subject: "second-cookie")
            let cases: [(String, [(String, String)], String)] = [
                ("all three", [("Authorization", "Bearer \(fromAuthorization)"), ("X-Token", fromHeader), ("Cookie", "gh=\(fromCookie)")],
                 "from-authorization"),
                ("header and cookie", [("X-Token", fromHeader), ("Cookie", "gh=\(fromCookie)")], "from-header"),
                ("cookie among others, twice", [("Cookie", "a=1; gh=\(fromCookie); gh=\(second)")], "from-cookie"),
                ("Basic and header", [("Authorization", "Basic dXNlcjpwYXNz"), ("X-Token", fromHeader), ("Cookie", "gh=\(fromCookie)")],
                 "from-header"),
                ("Basic and cookie", [("Authorization", "Basic dXNlcjpwYXNz"), ("Cookie", "gh=\(fromCookie)")], "from-cookie"),
                ("Bearerx scheme and header", [("Authorization", "Bearerx \(fromAuthorization)"), ("X-Token", fromHeader)], "from-header"),
            ]
            for (index, (what, headers, subject)) in cases.enumerated() {
                let response = try await env.request("/v1/p/\(index)", headers: headers)
                #expect(response.status == 200, "\(what): \(response.body)")
                let received = env.upstream.requests.first { $0.uri == "/v1/p/\(index)" }
                #expect(received?.value("x-auth-subject") == subject, "\(what)")
            }
            // An empty cookie value is no token: missing_token, nothing forwarded.
            let empty = try await env.request("/v1/empty", headers: [("Cookie", "gh=; theme=dark")])
            #expect(empty.status == 401)
            #expect(empty.json?["reason"] == .string("missing_token"))
            #expect(env.upstream.requests.count == cases.count)
        }
    }

    /// `401 malformed_token` for a `token_header` value that is empty or holds a space, and for a bearer
    /// `Authorization` without a token even when a good token header follows; a malformed token header does
    /// not fall back to the cookie, and does not matter when a bearer `Authorization` comes first.
    @Test func malformedTokenHeaderOrBearerIsMalformedTokenWithoutFallingBack() async throws {
        try await TestEnvironment.run(configure: Self.withHeaderAndCookie) { (env: TestEnvironment) async throws in
            let token = Self.token()
            let malformed: [(String, [String])] = [
                ("empty token header", ["X-Token: "]),
                ("token header of spaces", ["X-Token:    "]),
                ("token header with an inner space", ["X-Token: \(token) extra"]),
                ("empty token header before a good cookie", ["X-Token: ", "Cookie: gh=\(token)"]),
                ("spaced token header before a good cookie", ["X-Token: a b", "Cookie: gh=\(token)"]),
                ("Bearer without a token before a good header", ["Authorization: Bearer", "X-Token: \(token)"]),
            ]
            for (index, (what, fields)) in malformed.enumerated() {
                let answer = Self.raw(env, "/v1/m/\(index)", fields)
                #expect(answer.status == 401, "\(what): \(answer)")
                #expect(answer.body.contains("\"reason\":\"malformed_token\""), "\(what): \(answer.body)")
            }
            #expect(env.failureLog.count == malformed.count)
            #expect(env.failureLog.allSatisfy { $0["reason"] == .string("malformed_token") }, "\(env.failureLogLines)")
            try await env.expectNothingReachedUpstream()
            // A bearer Authorization is read first: a broken token header after it is never looked at.
            let first = Self.raw(env, "/v1/first", ["Authorization: Bearer \(token)", "X-Token: a b"])
            #expect(first.status == 200, "\(first)")
            #expect(env.upstream.last?.value("x-auth-subject") == "user-1")
        }
    }

    // MARK: - §3.4: [upstream] connect_timeout

    /// An upstream address whose SYNs go unanswered (a loopback listener with a full accept queue): 502
    /// `upstream_unavailable` after about `connect_timeout`, not after `[upstream] timeout`.
    @Test(arguments: [UpstreamProtocol.http1, .http2])
    func connectTimeoutBoundsAnUpstreamThatNeverAnswersTheHandshake(upstreamProtocol: UpstreamProtocol) async throws {
        let blackHole = try SaturatedListener()
        #expect(blackHole.dropsConnections(), "the accept queue is not full: connections would be refused, not left hanging")
        try await TestEnvironment.run(configure: { configuration, _ in
            configuration.upstream.url = URL(string: "http://127.0.0.1:\(blackHole.port)")!
            configuration.upstream.protocolVersion = upstreamProtocol
            configuration.upstream.connectTimeout = .milliseconds(600)
            configuration.upstream.timeout = .seconds(8)
        }) { (env: TestEnvironment) async throws in
            let started = ContinuousClock.now
            let response = try await env.request("/v1/orders", token: Self.token())
            let elapsed = ContinuousClock.now - started
            #expect(response.status == 502, "\(response.body)")
            #expect(response.json?["error"] == .string("upstream_unavailable"))
            #expect(elapsed >= .milliseconds(500) && elapsed < .milliseconds(2500), "502 after \(elapsed), connect_timeout is 600ms")
            #expect(env.failureLog.isEmpty)
        }
        withExtendedLifetime(blackHole) {}
    }

    // MARK: - §4.6: 101 to a request that is not a WebSocket upgrade

    /// The test upstream answers `/ws` with 101 whatever the request: to a plain GET, or to an `h2c` upgrade
    /// (forwarded without its `Upgrade`), that is 502, never a tunnel.
    @Test func anUpstream101ToARequestThatIsNotAWebSocketUpgradeIs502() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            let token = Self.token()
            let requests = [
                "GET /ws/plain HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(token)\r\nConnection: close\r\n\r\n",
                "GET /ws/h2c HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(token)\r\nConnection: Upgrade, HTTP2-Settings\r\n"
                    + "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n",
            ]
            for request in requests {
                let connection = try #require(RawHTTP.Connection(port: env.port, timeout: .seconds(5)))
                connection.send(request)
                let response = connection.receive(until: "\"}")
                #expect(RawHTTP.statuses(response) == [502], "\(response)")
                #expect(response.contains("\"error\":\"upstream_unavailable\""), "\(response)")
                #expect(!response.contains(" 101 "), "\(response)")
            }
            #expect(env.upstream.requests.map(\.uri) == ["/ws/plain", "/ws/h2c"], "both were forwarded")
            #expect(env.failureLog.isEmpty)
        }
    }

    // MARK: - §7.1: /.gatehouse/check

    /// A described URI without a normalized reading, from `X-Forwarded-Uri` or `X-Original-URI`: 400
    /// `{"error":"invalid_request"}`, not a judgement of some other path; no failure-log line, no upstream.
    @Test func checkWithAnUnreadableDescribedURIIs400InvalidRequest() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            let token = Self.token()
            let unreadable = ["/a%00b", "/v1/%zz", "/v1/a\\b", "/public/..%2Fadmin"]
            for uri in unreadable {
                for header in ["X-Forwarded-Uri", "X-Original-URI"] {
                    for presented in [nil, token] {
                        let response = try await env.request("/.gatehouse/check", token: presented, headers: [(header, uri)])
                        #expect(response.status == 400, "\(header): \(uri), token \(presented != nil): \(response.body)")
                        #expect(response.body == "{\"error\":\"invalid_request\"}", "\(header): \(uri): \(response.body)")
                    }
                }
            }
            #expect(env.failureLog.isEmpty, "\(env.failureLogLines)")
            try await env.expectNothingReachedUpstream()
            let metrics = MetricsText(try await env.admin("/metrics").body)
            #expect(metrics.value("gatehouse_requests_total", ["route_auth": "none", "outcome": "bad_request"]) == Double(unreadable.count * 4))
        }
    }

    /// Without `X-Forwarded-Method` / `X-Forwarded-Uri`, the check judges `X-Original-Method` / `X-Original-URI`
    /// (nginx's names); the `X-Forwarded-*` ones win when both are sent.
    @Test func checkFallsBackToTheOriginalMethodAndURI() async throws {
        try await TestEnvironment.run(configure: { configuration, _ in
            var open = RouteSettings(match: .prefix("/open"))
            open.methods = ["GET"]
            open.auth = .public
            configuration.routes = [open]
        }) { (env: TestEnvironment) async throws in
            func check(_ headers: [(String, String)]) async throws -> TestEnvironment.Response {
                try await env.request("/.gatehouse/check", headers: headers)
            }
            // URI fallback: the public route is recognised only through X-Original-URI.
            #expect(try await check([("X-Original-URI", "/open/page")]).status == 200)
            #expect(try await check([("X-Original-Method", "GET"), ("X-Original-URI", "/open/page")]).status == 200)
            // Method fallback: POST is not public on /open.
            let post = try await check([("X-Original-Method", "POST"), ("X-Original-URI", "/open/page")])
            #expect(post.status == 401, "\(post.body)")
            let line = try #require(env.failureLog.last)
            #expect(line["method"] == .string("POST"))
            #expect(line["path"] == .string("/open/page"))
            // Another described request: the failure log names it.
            #expect(try await check([("X-Original-Method", "DELETE"), ("X-Original-URI", "/private/x?q=1")]).status == 401)
            #expect(env.failureLog.last?["method"] == .string("DELETE"))
            #expect(env.failureLog.last?["path"] == .string("/private/x"))
            // X-Forwarded-* first.
            #expect(try await check([("X-Forwarded-Uri", "/private"), ("X-Original-URI", "/open/page")]).status == 401)
            #expect(env.failureLog.last?["path"] == .string("/private"))
            #expect(try await check([("X-Forwarded-Uri", "/open/page"), ("X-Original-URI", "/private")]).status == 200)
            #expect(try await check([("X-Forwarded-Method", "GET"), ("X-Original-Method", "POST"), ("X-Original-URI", "/open")]).status == 200)
            #expect(try await check([("X-Forwarded-Method", "POST"), ("X-Original-Method", "GET"), ("X-Original-URI", "/open")]).status == 401)
            #expect(env.failureLog.count == 4)
            try await env.expectNothingReachedUpstream()
        }
    }

    // MARK: - §4.6, §7.1: signout-everywhere without sub

    /// A verified token without `sub` cannot name a subject to sign out everywhere: 400 `invalid_request`,
    /// no failure-log line, nothing revoked (the token keeps working).
    @Test func signoutEverywhereWithATokenWithoutSubIs400() async throws {
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            var claims = Claims.valid()
            claims.removeValue(forKey: "sub")
            let token = TestSigner.ec.token(claims: claims)
            #expect(try await env.request("/v1/before", token: token).status == 200, "a token without sub is valid")
            let response = try await env.request("/.gatehouse/signout-everywhere", method: .POST, token: token)
            #expect(response.status == 400, "\(response.body)")
            #expect(response.json?["error"] == .string("invalid_request"), "\(response.body)")
            #expect(response.json?["signed_out"] == nil)
            #expect(env.failureLog.isEmpty, "\(env.failureLogLines)")
            #expect(try await env.request("/v1/after", token: token).status == 200, "nothing was revoked")
            // The same endpoint with a token that has a sub works: the 400 is about the sub.
            #expect(try await env.request("/.gatehouse/signout-everywhere", method: .POST, token: Self.token()).status == 200)
        }
    }

    // MARK: - §3.8: key documents over 1 MiB

    /// JSON of exactly `size` bytes: `document` with spaces before its closing brace.
    static func padded(_ document: String, to size: Int) -> String {
        precondition(document.hasSuffix("}") && document.utf8.count <= size)
        return String(document.dropLast()) + String(repeating: " ", count: size - document.utf8.count) + "}"
    }

    static let mebibyte = 1 << 20

    /// A JWKS of 1 MiB + 1 byte is refused (no keys: 503 `keys_unavailable`, a fetch failure); the same
    /// key set padded to exactly 1 MiB is taken.
    @Test func aJWKSOverOneMebibyteIsRefused() async throws {
        let keys = TestSigner.jwks([.ec])
        try await TestEnvironment.run(signers: [.ec], waitForKeys: false, configure: { configuration, jwks in
            jwks.update { $0.body = Self.padded(keys, to: Self.mebibyte + 1) }
            configuration.jwks.minRefresh = .milliseconds(200)
            configuration.jwks.maxRefresh = .milliseconds(200)
        }) { (env: TestEnvironment) async throws in
            #expect(await Contract.eventually { env.jwks.fetchCount >= 2 }, "the key server was asked (and asked again)")
            let refused = try await env.request("/v1/orders", token: Self.token())
            #expect(refused.status == 503, "\(refused.body)")
            #expect(refused.json?["reason"] == .string("keys_unavailable"))
            let ready = try await env.admin("/readyz")
            #expect(ready.status == 503)
            let provider = try #require(ready.json?["providers"]?.arrayValue?.first?.objectValue)
            #expect(provider["keys"] == .number("0"))
            #expect(provider["last_error"]?.stringValue?.isEmpty == false, "\(ready.body)")
            let metrics = MetricsText(try await env.admin("/metrics").body)
            let failures = try #require(metrics.value("gatehouse_jwks_fetches_total", ["provider": "test", "result": "failure"]), "\(metrics.text)")
            #expect(failures >= 1)
            #expect(metrics.value("gatehouse_jwks_fetches_total", ["provider": "test", "result": "success"]) == nil)

            env.jwks.update { $0.body = Self.padded(keys, to: Self.mebibyte) }
            #expect(await Contract.eventually { env.gatehouse.keyStore.status().allSatisfy(\.usable) }, "exactly 1 MiB is accepted")
            #expect(try await env.request("/v1/orders", token: Self.token()).status == 200)
        }
    }

    /// The same limit for the OIDC discovery document.
    @Test func aDiscoveryDocumentOverOneMebibyteIsRefused() async throws {
        try await TestEnvironment.run(signers: [.ec], waitForKeys: false, configure: { configuration, jwks in
            let issuer = "http://127.0.0.1:\(jwks.port)"
            let discovery = "{\"issuer\":\"\(issuer)\",\"jwks_uri\":\"\(jwks.jwksURL.absoluteString)\"}"
            jwks.update { $0.discovery = Self.padded(discovery, to: Self.mebibyte + 1) }
            var provider = ProviderSettings(name: "corp", type: .oidc)
            provider.issuer = issuer
            provider.audiences = [Claims.audience]
            configuration.providers = [provider]
            configuration.jwks.minRefresh = .milliseconds(200)
            configuration.jwks.maxRefresh = .milliseconds(200)
        }) { (env: TestEnvironment) async throws in
            let issuer = "http://127.0.0.1:\(env.jwks.port)"
            let token = TestSigner.ec.token(claims: Claims.valid(extra: ["iss": .string(issuer)]))
            #expect(await Contract.eventually { env.jwks.discoveryCount >= 2 }, "discovery was asked (and asked again)")
            #expect(env.jwks.fetchCount == 0, "no JWKS fetched through a refused discovery document")
            let refused = try await env.request("/v1/orders", token: token)
            #expect(refused.status == 503, "\(refused.body)")
            #expect(refused.json?["reason"] == .string("keys_unavailable"))
            #expect(try await env.admin("/readyz").status == 503)

            let discovery = "{\"issuer\":\"\(issuer)\",\"jwks_uri\":\"\(env.jwks.jwksURL.absoluteString)\"}"
            env.jwks.update { $0.discovery = Self.padded(discovery, to: Self.mebibyte) }
            #expect(await Contract.eventually { env.gatehouse.keyStore.status().allSatisfy(\.usable) }, "exactly 1 MiB is accepted")
            #expect(try await env.request("/v1/orders", token: token).status == 200)
        }
    }
}
