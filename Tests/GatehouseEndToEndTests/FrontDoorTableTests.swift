import Foundation
@testable import Gatehouse
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing
import GatehouseSyntax
import GatehouseRules
import GatehouseConfig
import GatehouseTokens
import GatehouseAuth
import GatehouseExchange
import GatehouseProxy
import GatehouseVocabulary
import GatehousePolicy

/// One table of requests, each run four ways: through the request core alone (`ExchangeStateMachine`
/// driven with events, no socket), through the HTTP/1.1 door, through the HTTP/2 door (real sockets),
/// and as an Envoy ext_authz Check of the request (raw gRPC Checks: allowed = forwarded), on each upstream protocol. Every rejection reason, each own endpoint (HEAD included),
/// sign-out, a public and an optional route, a forwarded request and an upstream timeout: the same
/// request gets the same answer, the same failure-log line and the same way to the upstream, whichever
/// door it came by (issue 19: one core behind both doors).
@Suite(.serialized, .timeLimit(.minutes(2)))
struct FrontDoorTableTests {
    enum Door: String, CaseIterable {
        case core, http1, http2
        /// An ext_authz Check describing the request (ExtAuthzTests' client): Gatehouse's own endpoints are not
        /// reachable through a Check (404), and an allowed Check is "forwarded" by the gateway, not by Gatehouse.
        case check
    }

    /// What a request must come to.
    enum Expected: Equatable {
        /// Forwarded upstream; the client gets this status (the core's part ends with the forward).
        case forwarded(status: Int)
        /// Answered by Gatehouse. `reason`: the JSON body's `reason` and the one failure-log line's;
        /// nil: no reason, nothing logged.
        case local(status: Int, reason: String?)
    }

    struct Case {
        var name: String
        var method = "GET"
        var path: String
        var token: String?
        var headers: [(String, String)] = []
        var expected: Expected
        /// The Check's `context_extensions` (the doors have no context), and what the Check comes to when it differs.
        var context: [String: String] = [:]
        var expectedOnCheck: Expected?
        /// A 503's `Retry-After` is at least this (every 503 has one of at least a second).
        var retryAfterAtLeast = 1
    }

    /// What one door made of one request.
    struct Outcome: Equatable, CustomStringConvertible {
        var forwarded: Bool
        var status: Int?
        var reason: String?
        var loggedReasons: [String]
        var bodyBytes: Int
        /// The answer ended cleanly (an HTTP/2 stream ended, not reset).
        var complete = true
        /// The answer's `Retry-After`.
        var retryAfter: String?

        var description: String {
            "\(forwarded ? "forwarded" : "local") \(status.map(String.init) ?? "-") reason \(reason ?? "-") logged \(loggedReasons) "
                + "body \(bodyBytes)B\(complete ? "" : ", cut short")\(retryAfter.map { ", Retry-After \($0)" } ?? "")"
        }
    }

    static let downIssuer = "https://down.test"

    static func configure(_ configuration: inout Configuration, _ jwks: TestJWKSServer) {
        configuration.extAuthz = ExtAuthzSettings(address: SocketAddressSetting(host: "127.0.0.1", port: 0))
        configuration.jwks.unknownKidCooldown = .seconds(600)  // outlasts the table: see unknownKidCoolingDown
        configuration.providers.append(.keyless())
        func route(_ prefix: String, _ change: (inout RouteSettings) -> Void) -> RouteSettings {
            var route = RouteSettings(match: .prefix(prefix))
            change(&route)
            return route
        }
        configuration.routes = [
            // Issue 44's hosts: the table's requests name 127.0.0.1 (Host, :authority, the Check's authority).
            route("/hosted") { $0.auth = .public; $0.hosts = ["127.0.0.1"] },
            route("/elsewhere") { $0.auth = .public; $0.hosts = ["*.example.com"] },
            // Issue 44's context: only a Check whose context_extensions hold service=billing (and any other pairs) takes it.
            route("/billing") { $0.auth = .public; $0.context = ["service": "billing"] },
            // Issue 44's rules: three comparisons over the claims and the request, and one over a claim that is absent.
            route("/ruled") {
                $0.when = try! RuleExpression(  // safe: a constant valid rule
                    rule: "claims.email.endsWith('@example.com') && request.method == 'GET' && request.headers['x-tier'] == 'gold' "
                        + "&& request.host.startsWith('127.0.0.1') && request.path.startsWith('/ruled/')", maxHeaderBytes: 16384)
            },
            route("/tenanted") { $0.when = try! RuleExpression(rule: "claims.tenant == 'acme'", maxHeaderBytes: 16384) },  // safe: valid
            route("/health") { $0.auth = .public },
            route("/maybe") { $0.auth = .optional },
            route("/admin") { $0.scopes = ["admin"] },
            route("/team") { $0.groups = ["ops"] },
            route("/down") { $0.providers = ["down"] },
        ]
    }

    static func cases(revoked: String, signOut: String) -> [Case] {
        let now = Int64(Date().timeIntervalSince1970)
        let valid = TestSigner.ec.token(claims: Claims.valid())
        func claims(_ extra: [String: JSONValue]) -> String { TestSigner.ec.token(claims: Claims.valid(extra: extra)) }
        let unsigned = Base64URL.encode(Array("{\"alg\":\"none\",\"typ\":\"JWT\"}".utf8)) + "."
            + Base64URL.encode(Array(JSONValue.object(Claims.valid()).compactJSON.utf8)) + "."
        return [
            Case(name: "forwarded", path: "/v1/orders", token: valid, expected: .forwarded(status: 200)),
            Case(name: "public", path: "/health", expected: .forwarded(status: 200)),
            // A route of this host applies; one of another host does not (the default rule: a token is required).
            Case(name: "routeOfThisHost", path: "/hosted/page", expected: .forwarded(status: 200)),
            Case(name: "routeOfAnotherHost", path: "/elsewhere/page", expected: .local(status: 401, reason: "missing_token")),
            // The decision endpoint judges the host its caller names in X-Forwarded-Host, else the one it was asked on.
            Case(name: "checkForwardedHost", path: "/.gatehouse/check",
                 headers: [("x-forwarded-uri", "/elsewhere/page"), ("x-forwarded-host", "api.example.com:443")],
                 expected: .local(status: 200, reason: nil)),
            Case(name: "checkOwnHost", path: "/.gatehouse/check", headers: [("x-forwarded-uri", "/elsewhere/page")],
                 expected: .local(status: 401, reason: "missing_token")),
            // A route of a context applies to a Check in that context, never on a door (no context there).
            Case(name: "routeOfThisContext", path: "/billing/invoices", expected: .local(status: 401, reason: "missing_token"),
                 context: ["service": "billing", "tier": "gold"], expectedOnCheck: .forwarded(status: 200)),
            Case(name: "routeOfAnotherContext", path: "/billing/invoices", expected: .local(status: 401, reason: "missing_token"),
                 context: ["service": "orders"]),
            // A `when` rule: true forwards; false, or an error (a claim the token lacks), is 403 forbidden, on every way in.
            Case(name: "ruleAllows", path: "/ruled/x", token: valid, headers: [("x-tier", "gold")], expected: .forwarded(status: 200)),
            Case(name: "ruleDenies", path: "/ruled/x", token: valid, headers: [("x-tier", "silver")], expected: .local(status: 403, reason: "forbidden")),
            Case(name: "ruleErrorDenies", path: "/tenanted/x", token: valid, expected: .local(status: 403, reason: "forbidden")),
            Case(name: "checkRuleAllows", path: "/.gatehouse/check", token: valid, headers: [("x-forwarded-uri", "/ruled/x"), ("x-tier", "gold")],
                 expected: .local(status: 200, reason: nil)),
            Case(name: "checkRuleDenies", path: "/.gatehouse/check", token: valid, headers: [("x-forwarded-uri", "/ruled/x")],
                 expected: .local(status: 403, reason: "forbidden")),
            Case(name: "optionalGuest", path: "/maybe", expected: .forwarded(status: 200)),
            Case(name: "upstreamTimeout", path: "/slow", token: valid, expected: .forwarded(status: 504)),
            Case(name: "missingToken", path: "/v1/orders", expected: .local(status: 401, reason: "missing_token")),
            Case(name: "malformedToken", path: "/v1/orders", token: "not-a-jwt", expected: .local(status: 401, reason: "malformed_token")),
            Case(name: "unsupportedAlgorithm", path: "/v1/orders", token: unsigned, expected: .local(status: 401, reason: "unsupported_algorithm")),
            Case(name: "unknownIssuer", path: "/v1/orders", token: claims(["iss": .string("https://evil.test")]),
                 expected: .local(status: 401, reason: "unknown_issuer")),
            // Issued an hour before the keys were listed, without its kid: evidence the kid is not the provider's, so
            // 401 on every way in, with no refetch and no cooldown in play (a fresh token would get 503 on the second way).
            Case(name: "unknownKey", path: "/v1/orders",
                 token: TestSigner.ec.with(keyID: "ec-unknown").token(claims: Claims.valid(extra: ["iat": .number(String(now - 3600))])),
                 expected: .local(status: 401, reason: "unknown_key")),
            Case(name: "badSignature", path: "/v1/orders", token: TestSigner.otherRSA.with(keyID: "rsa-1").token(claims: Claims.valid()),
                 expected: .local(status: 401, reason: "bad_signature")),
            Case(name: "expired", path: "/v1/orders", token: claims(["iat": .number(String(now - 7200)), "exp": .number(String(now - 3600))]),
                 expected: .local(status: 401, reason: "expired")),
            Case(name: "notYetValid", path: "/v1/orders", token: claims(["nbf": .number(String(now + 3600))]),
                 expected: .local(status: 401, reason: "not_yet_valid")),
            Case(name: "wrongAudience", path: "/v1/orders", token: claims(["aud": .string("other-api")]),
                 expected: .local(status: 401, reason: "wrong_audience")),
            Case(name: "invalidClaims", path: "/v1/orders", token: claims(["exp": .string("tomorrow")]),
                 expected: .local(status: 401, reason: "invalid_claims")),
            Case(name: "revoked", path: "/v1/orders", token: revoked, expected: .local(status: 401, reason: "revoked")),
            Case(name: "insufficientScope", path: "/admin/x", token: valid, expected: .local(status: 403, reason: "insufficient_scope")),
            Case(name: "forbidden", path: "/team/x", token: valid, expected: .local(status: 403, reason: "forbidden")),
            Case(name: "keysUnavailable", path: "/down/x", token: claims(["iss": .string(downIssuer)]),
                 expected: .local(status: 503, reason: "keys_unavailable")),
            // A fresh token naming a kid the set lacks, while the refetch cooldown (spent before the table ran) forbids a
            // fetch: nothing says the kid is not the provider's, so retry (503) when a fetch may start, never 401.
            Case(name: "unknownKidCoolingDown", path: "/v1/orders", token: TestSigner.ec.with(keyID: "ec-just-published").token(claims: Claims.valid()),
                 expected: .local(status: 503, reason: "keys_unavailable"), retryAfterAtLeast: 60),
            Case(name: "checkUnknownKidCoolingDown", path: "/.gatehouse/check",
                 token: TestSigner.ec.with(keyID: "ec-just-published").token(claims: Claims.valid()),
                 headers: [("x-forwarded-uri", "/v1/orders")], expected: .local(status: 503, reason: "keys_unavailable"), retryAfterAtLeast: 60),
            Case(name: "badTarget", path: "/public/..;/admin", token: valid, expected: .local(status: 400, reason: nil)),
            Case(name: "userinfo", path: "/.gatehouse/userinfo", token: valid, expected: .local(status: 200, reason: nil)),
            Case(name: "userinfoHEAD", method: "HEAD", path: "/.gatehouse/userinfo", token: valid, expected: .local(status: 200, reason: nil)),
            Case(name: "userinfoWithoutToken", path: "/.gatehouse/userinfo", expected: .local(status: 401, reason: "missing_token")),
            Case(name: "check", path: "/.gatehouse/check", token: valid, headers: [("x-forwarded-uri", "/v1/orders")],
                 expected: .local(status: 200, reason: nil)),
            Case(name: "checkHEAD", method: "HEAD", path: "/.gatehouse/check", token: valid, headers: [("x-forwarded-uri", "/v1/orders")],
                 expected: .local(status: 200, reason: nil)),
            Case(name: "checkRefused", path: "/.gatehouse/check", headers: [("x-forwarded-uri", "/admin/x")],
                 expected: .local(status: 401, reason: "missing_token")),
            Case(name: "checkBadTarget", path: "/.gatehouse/check", token: valid, headers: [("x-forwarded-uri", "/public/..;/admin")],
                 expected: .local(status: 400, reason: nil)),
            Case(name: "unknownEndpoint", path: "/.gatehouse/nope", token: valid, expected: .local(status: 404, reason: nil)),
            Case(name: "methodNotAllowed", method: "POST", path: "/.gatehouse/userinfo", token: valid, expected: .local(status: 405, reason: nil)),
            Case(name: "signoutHEAD", method: "HEAD", path: "/.gatehouse/signout", token: valid, expected: .local(status: 405, reason: nil)),
            Case(name: "signout", method: "POST", path: "/.gatehouse/signout", token: signOut, expected: .local(status: 200, reason: nil)),
            Case(name: "signoutWithoutToken", method: "POST", path: "/.gatehouse/signout", expected: .local(status: 401, reason: "missing_token")),
        ]
    }

    static func requestID(_ door: Door, _ testCase: Case) -> String { "\(door.rawValue)-\(testCase.name)" }

    /// The path with a marker that tells whether this door's request reached the upstream.
    static func target(_ door: Door, _ testCase: Case) -> String {
        testCase.path + "?door=\(door.rawValue)&case=\(testCase.name)"
    }

    static func headers(_ door: Door, _ testCase: Case) -> [(String, String)] {
        var headers = [("x-request-id", requestID(door, testCase))] + testCase.headers
        if let token = testCase.token { headers.append(("authorization", "Bearer \(token)")) }
        return headers
    }

    @Test(arguments: [UpstreamProtocol.http1, .http2])
    func everyCaseGetsTheSameAnswerThroughTheCoreAndBothDoors(_ upstream: UpstreamProtocol) async throws {
        try await TestEnvironment.run(waitForKeys: false, upstreamHTTP2: upstream == .http2, configure: Self.configure) { env in
            try await Self.waitForTheTestProvider(env)
            // Spends the refetch cooldown (10 minutes here): a fresh unknown kid is refetched once, and refused with that evidence.
            let noise = try await env.request("/v1/orders", token: TestSigner.ec.with(keyID: "noise").token(claims: Claims.valid()))
            #expect(noise.status == 401 && noise.json?["reason"] == .string("unknown_key"))
            let revoked = TestSigner.ec.token(claims: Claims.valid(extra: ["jti": .string("table-revoked")]))
            #expect(try await env.request("/.gatehouse/signout", method: .POST, token: revoked).status == 200)
            for door in Door.allCases {
                // Each door signs out a token of its own (a sign-out answers 200 again for a signed-out token too).
                let signOut = TestSigner.ec.token(claims: Claims.valid(extra: ["jti": .string("table-signout-\(door.rawValue)")]))
                let cases = Self.cases(revoked: revoked, signOut: signOut)
                let outcomes = try await Self.run(cases, through: door, env)
                for testCase in cases {
                    let outcome = try #require(outcomes[testCase.name], "\(door) gave no outcome for \(testCase.name)")
                    Self.check(outcome, of: testCase, door: door, env: env)
                }
            }
        }
    }

    /// What a case must come to through a door: the table's answer, but a Check for an own endpoint is 404.
    static func expected(_ testCase: Case, through door: Door) -> Expected {
        if door == .check, testCase.path.hasPrefix("/.gatehouse/") { return .local(status: 404, reason: nil) }
        if door == .check, let onCheck = testCase.expectedOnCheck { return onCheck }
        return testCase.expected
    }

    static func check(_ outcome: Outcome, of testCase: Case, door: Door, env: TestEnvironment, sourceLocation: SourceLocation = #_sourceLocation) {
        let what = "\(testCase.name) through \(door): \(outcome)"
        let marker = "door=\(door.rawValue)&case=\(testCase.name)"
        let reachedUpstream = env.upstream.requests.contains { $0.uri.hasSuffix(marker) }
        #expect(outcome.complete, "\(what): not answered whole", sourceLocation: sourceLocation)
        switch expected(testCase, through: door) {
        case .forwarded(let status):
            #expect(outcome.forwarded, "\(what): not forwarded", sourceLocation: sourceLocation)
            if door != .core && door != .check {
                #expect(outcome.status == status, "\(what): status", sourceLocation: sourceLocation)
                #expect(reachedUpstream, "\(what): never reached the upstream", sourceLocation: sourceLocation)
            }
            #expect(outcome.loggedReasons.isEmpty, "\(what): logged", sourceLocation: sourceLocation)
        case .local(let status, let reason):
            #expect(!outcome.forwarded && outcome.status == status, "\(what): status", sourceLocation: sourceLocation)
            #expect(outcome.reason == reason, "\(what): reason", sourceLocation: sourceLocation)
            #expect(outcome.loggedReasons == (reason.map { [$0] } ?? []), "\(what): failure log", sourceLocation: sourceLocation)
            #expect(!reachedUpstream, "\(what): reached the upstream", sourceLocation: sourceLocation)
            if status == 503 {
                let seconds = outcome.retryAfter.flatMap { Int($0) }
                #expect(seconds.map { $0 >= testCase.retryAfterAtLeast } == true, "\(what): Retry-After", sourceLocation: sourceLocation)
            }
            if testCase.method == "HEAD" && door != .check {
                #expect(outcome.bodyBytes == 0, "\(what): a HEAD answer with a body", sourceLocation: sourceLocation)
            } else if status == 200 {
                #expect(outcome.bodyBytes > 0, "\(what): no body", sourceLocation: sourceLocation)
            }
        }
    }

    static func run(_ cases: [Case], through door: Door, _ env: TestEnvironment) async throws -> [String: Outcome] {
        var outcomes: [String: Outcome] = [:]
        switch door {
        case .core:
            for testCase in cases { outcomes[testCase.name] = try await throughTheCore(testCase, env) }
        case .http1:
            for testCase in cases {
                let response = try await env.request(
                    target(door, testCase), method: HTTPMethod(rawValue: testCase.method), headers: headers(door, testCase))
                outcomes[testCase.name] = outcome(
                    door, testCase, env, status: response.status, body: response.body, retryAfter: response.headers.first(name: "retry-after"))
            }
        case .check:
            let port = try #require(env.gatehouse.extAuthzAddress?.port)
            let answers = try await ExtAuthzTests.call(port, cases.map { testCase in
                // The request as a client of the client port sent it (its origin is what DPoP proofs name).
                ExtAuthzTests.check(testCase.name, method: testCase.method, path: target(door, testCase), authority: "127.0.0.1:\(env.port)",
                                    headers: headers(door, testCase), source: "127.0.0.1",
                                    extra: testCase.context.isEmpty ? [:] : ["context": .object(testCase.context.mapValues { .string($0) })])
            })
            for testCase in cases {
                let answer = try #require(answers[testCase.name], "no Check answer for \(testCase.name)")
                #expect(answer.code == 0, "\(testCase.name): the Check itself failed: \(answer)")
                let json = try? StrictJSON.parse(Array(answer.body.utf8)).objectValue
                outcomes[testCase.name] = Outcome(
                    forwarded: answer.allowed == true, status: answer.deniedStatus, reason: json?["reason"]?.stringValue,
                    loggedReasons: loggedReasons(env, requestID(door, testCase)), bodyBytes: answer.body.utf8.count,
                    retryAfter: answer.values("retry-after").first)
            }
        case .http2:
            let answers = try await HTTP2IntakeTests.send(cases.map { testCase in
                HTTP2IntakeTests.Sent(
                    name: testCase.name,
                    headers: HTTP2IntakeTests.block(env, method: testCase.method, path: target(door, testCase)) + headers(door, testCase))
            }, to: env)
            for testCase in cases {
                let answer = try #require(answers[testCase.name], "no HTTP/2 answer for \(testCase.name)")
                outcomes[testCase.name] = outcome(door, testCase, env, status: answer.status, body: answer.body, retryAfter: answer.value("retry-after"))
                outcomes[testCase.name]?.complete = answer.ended && answer.resetCode == nil
            }
        }
        return outcomes
    }

    static func outcome(_ door: Door, _ testCase: Case, _ env: TestEnvironment, status: Int?, body: String, retryAfter: String?) -> Outcome {
        let json = try? StrictJSON.parse(Array(body.utf8)).objectValue
        let forwarded = env.upstream.requests.contains { $0.uri.hasSuffix("door=\(door.rawValue)&case=\(testCase.name)") }
        return Outcome(
            forwarded: forwarded, status: status, reason: forwarded ? nil : json?["reason"]?.stringValue,
            loggedReasons: loggedReasons(env, requestID(door, testCase)), bodyBytes: body.utf8.count, retryAfter: retryAfter)
    }

    static func loggedReasons(_ env: TestEnvironment, _ requestID: String) -> [String] {
        env.failureLog.filter { $0["request_id"] == .string(requestID) }.compactMap { $0["reason"]?.stringValue }
    }

    /// The request core alone: head, end and the read's end as events, a pending decision or sign-out
    /// awaited and reported back, until the core answers or hands the request to the upstream leg.
    static func throughTheCore(_ testCase: Case, _ env: TestEnvironment) async throws -> Outcome {
        let services = try #require(env.gatehouse.currentServices)
        var fields = [("host", "127.0.0.1:\(env.port)")]
        fields += headers(.core, testCase)
        let head = HTTPRequestHead(version: .http1_1, method: HTTPMethod(rawValue: testCase.method), uri: target(.core, testCase),
                                   headers: HTTPHeaders(fields))
        var core = ExchangeStateMachine(speaksGRPC: false, forwardsAtReadEnd: false)
        core.readBegan(now: .now())
        // Each event's records counted and logged as a door's driver does (`ExchangeDriving.performRecords`).
        func recorded(_ action: ExchangeStateMachine.Action) -> ExchangeStateMachine.Action {
            if let records = core.takeRecords() { services.record(records, on: MultiThreadedEventLoopGroup.singleton.any()) }
            return action
        }
        var pending = [recorded(core.receivedHead(head, clientIP: "127.0.0.1", settings: services.exchange, recent: nil, now: .now()))]
        pending.append(recorded(core.receivedEnd()))
        pending.append(recorded(core.readEnded()))
        while !pending.isEmpty {
            switch pending.removeFirst() {
            case .none, .ignored, .readBody, .retry, .cut, .logOut:
                continue
            case .decide(let request, let recent, let generation):
                let eventLoop = MultiThreadedEventLoopGroup.singleton.next()
                let verdict: GateVerdict
                do {
                    verdict = try await services.decide(request, recent: recent, now: Date(), on: eventLoop).future(on: eventLoop).get()
                } catch {
                    pending.append(recorded(core.decisionFailed(generation: generation, now: .now())))
                    continue
                }
                pending.append(recorded(core.decided(verdict, generation: generation, now: .now(), wallClock: Int64(Date().timeIntervalSince1970))))
            case .signOut(let endpoint, let identity, let request, let body, let generation):
                let answer = services.signOut(endpoint, identity, request, body: body, on: MultiThreadedEventLoopGroup.singleton.next())
                pending.append(recorded(core.answered(try await answer.get(), generation: generation)))
            case .send(let response):
                let json = try? StrictJSON.parse(Array(response.body.utf8)).objectValue
                let body = core.inHand?.isHEAD == true ? 0 : response.body.utf8.count
                return Outcome(forwarded: false, status: Int(response.status.code), reason: json?["reason"]?.stringValue,
                               loggedReasons: loggedReasons(env, requestID(.core, testCase)), bodyBytes: body,
                               retryAfter: response.headers.first(name: "retry-after"))
            case .forward:
                return Outcome(forwarded: true, status: nil, reason: nil, loggedReasons: loggedReasons(env, requestID(.core, testCase)), bodyBytes: 0)
            }
        }
        Issue.record("the core neither answered nor forwarded \(testCase.name)")
        return Outcome(forwarded: false, status: nil, reason: nil, loggedReasons: [], bodyBytes: 0)
    }

    /// An answer that closes the HTTP/1.1 connection (a request target with no single reading) closes it
    /// on both upstream protocols, with `Connection: close`: the request pipelined behind it is not read.
    @Test(arguments: [UpstreamProtocol.http1, .http2])
    func aBadTargetClosesTheHTTP1ConnectionWhateverTheUpstream(_ upstream: UpstreamProtocol) async throws {
        try await TestEnvironment.run(upstreamHTTP2: upstream == .http2) { env in
            let raw = RawHTTP.exchange(port: env.port, "GET /public/..;/admin HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                + "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            #expect(RawHTTP.statuses(raw) == [400], "\(raw)")
            #expect(raw.lowercased().contains("connection: close"), "\(raw)")
            try await env.expectNothingReachedUpstream()
        }
    }

    /// The `test` provider's keys are in and the revocation list is read (the `down` provider never gets keys).
    static func waitForTheTestProvider(_ env: TestEnvironment) async throws {
        for _ in 0..<1000 {
            if env.gatehouse.keyStore.status().first?.usable == true, env.gatehouse.revocations.status.loadedOnce { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("the test provider never got its keys")
    }
}
