import Crypto
import _CryptoExtras
import Foundation
@testable import Gatehouse
import NIOCore
import NIOHTTP1
import Testing
import GatehouseSyntax
@testable import GatehouseConfig
import GatehouseAuth
import GatehouseVocabulary

/// The signed identity assertion (`[assertion]`, docs/reference.md §15; docs/security.md A01-A06), checked the way an
/// upstream checks it: by PyJWT (its PyJWKClient fetching Gatehouse's JWKS) and jwcrypto (Resources/assertion/verifier.py),
/// audience, issuer and algorithms pinned.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct AssertionTests {
    static let issuer = "https://gatehouse.test"

    /// PEM key files in a fresh folder, removed afterwards.
    struct KeyFiles {
        let folder: String

        init() throws {
            folder = NSTemporaryDirectory() + "gatehouse-assertion-" + UUID().uuidString
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }

        func write(_ name: String, _ pem: String) throws -> String {
            let path = folder + "/" + name
            try pem.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }

        func p256(_ name: String) throws -> String { try write(name, P256.Signing.PrivateKey().pemRepresentation) }

        /// PKCS #8 (RFC 8410), as `openssl genpkey -algorithm ed25519` writes it.
        func ed25519(_ name: String) throws -> String {
            let der = [0x30, 0x2E, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20]
                + Array(Curve25519.Signing.PrivateKey().rawRepresentation)
            return try write(name, "-----BEGIN PRIVATE KEY-----\n\(Data(der).base64EncodedString())\n-----END PRIVATE KEY-----\n")
        }

        func remove() { try? FileManager.default.removeItem(atPath: folder) }
    }

    /// The verifier service an upstream would run (PyJWT + jwcrypto), pointed at one JWKS URL.
    struct Verifier {
        let pid: pid_t
        let port: Int

        /// - Parameter lifespan: how long it keeps a fetched JWKS (Gatehouse says 300 s in `max-age`).
        static func start(jwksURL: String, audience: String, lifespan: Int = 300) async throws -> Verifier {
            let (pid, port) = try await PythonPeer.startServer(
                "assertion", "verifier.py",
                ["--jwks-url", jwksURL, "--audience", audience, "--issuer", AssertionTests.issuer, "--lifespan", String(lifespan)],
                what: "the assertion verifier")
            return Verifier(pid: pid, port: port)
        }

        /// Both libraries' verdicts on one assertion (nil: none was sent, an issue of the test).
        func check(_ assertion: String?, with env: TestEnvironment) async throws -> Verdict {
            guard let assertion else {
                Issue.record("no assertion to check")
                return Verdict(object: [:])
            }
            let answer = try await env.request("/verify", headers: [("X-Assertion", assertion)], port: port)
            return Verdict(object: try #require(try StrictJSON.parse(Array(answer.body.utf8)).objectValue, "\(answer.body)"))
        }

        func stop() { ChildProcess.stop(pid, grace: .zero) }
    }

    struct Verdict: CustomStringConvertible {
        let object: [String: JSONValue]
        /// The claims, when both libraries accepted the assertion and agree on them.
        var claims: [String: JSONValue]? {
            guard let pyjwt = object["pyjwt"]?.objectValue?["claims"]?.objectValue,
                  object["jwcrypto"]?.objectValue?["claims"]?.objectValue == pyjwt else { return nil }
            return pyjwt
        }
        /// Whether both refused it; their reasons.
        var refusedByBoth: Bool { object["pyjwt"]?.objectValue?["error"] != nil && object["jwcrypto"]?.objectValue?["error"] != nil }
        var header: [String: JSONValue] { object["header"]?.objectValue ?? [:] }
        var fetches: (pyjwt: Int64, jwcrypto: Int64) {
            let counts = object["fetches"]?.objectValue ?? [:]
            return (counts["pyjwt"]?.integerValue ?? -1, counts["jwcrypto"]?.integerValue ?? -1)
        }
        var description: String { JSONValue.object(object).compactJSON }
    }

    /// Gatehouse with `[assertion]` signing with `keyFile`, and a verifier reading the client port's JWKS.
    static func run(
        keyFile: (KeyFiles) throws -> String = { try $0.p256("signing.pem") }, upstreamHTTP2: Bool = false, configurationPath: String? = nil,
        configure: @escaping (inout Configuration) -> Void = { _ in },
        _ body: (TestEnvironment, Verifier, KeyFiles) async throws -> Void
    ) async throws {
        let keys = try KeyFiles()
        defer { keys.remove() }
        let signingKey = try AssertionKey.load(file: try keyFile(keys), needs: .privateKey)
        try await TestEnvironment.run(configurationPath: configurationPath, upstreamHTTP2: upstreamHTTP2, configure: { configuration, _ in
            var assertion = AssertionSettings(
                issuer: Self.issuer, audience: ConfigurationDecoder.origin(of: configuration.upstream.url), signingKey: signingKey)
            assertion.claims = ["email", "groups"]
            configuration.assertion = assertion
            var publicRoute = RouteSettings(match: .prefix("/public"))
            publicRoute.auth = .public
            var guestRoute = RouteSettings(match: .prefix("/guest"))
            guestRoute.auth = .optional
            configuration.routes = [publicRoute, guestRoute]
            configure(&configuration)
        }) { env in
            let verifier = try await Verifier.start(
                jwksURL: env.baseURL + "/.gatehouse/jwks.json", audience: "http://127.0.0.1:\(env.upstream.port)")
            defer { verifier.stop() }
            try await body(env, verifier, keys)
        }
    }

    static func token(lifetime: Int64 = 600, subject: String = "user-1") -> String {
        TestSigner.ec.token(claims: Claims.valid(subject: subject, lifetime: lifetime, extra: [
            "email": .string("ada@example.com"), "groups": .array([.string("admins"), .string("ops")]),
        ]))
    }

    /// Every spelling of the header a client could try to smuggle.
    static let spoofed = [("X-Gatehouse-Assertion", "forged"), ("x_gatehouse_assertion", "forged"), ("X-GATEHOUSE_ASSERTION", "forged")]

    static func assertions(in received: TestUpstream.Received?) -> [String] {
        (received?.headers ?? []).filter { Self.folded($0.0) == "x-gatehouse-assertion" }.map(\.1)
    }

    /// Lower case, `_` read as `-`: how many upstream stacks read a header name.
    static func folded(_ name: String) -> String { name.lowercased().replacingOccurrences(of: "_", with: "-") }

    static func payload(of token: String) -> [String: JSONValue]? {
        let parts = token.split(separator: ".")
        guard parts.count == 3, let bytes = Base64URL.decode(Array(parts[1].utf8)) else { return nil }
        return try? StrictJSON.parse(bytes).objectValue
    }

    static func signatures(_ env: TestEnvironment) async throws -> Int {
        let metrics = try await env.admin("/metrics").body
        let line = metrics.split(separator: "\n").first { $0.hasPrefix("gatehouse_assertion_signatures_total{result=\"success\"}") }
        return Int(try #require(line?.split(separator: " ").last.flatMap { Double($0) }, "\(metrics)"))
    }

    // MARK: - The assertion

    @Test func everyClaimIsAsSpecifiedAndTwoLibrariesVerifyIt() async throws {
        try await Self.run { env, verifier, _ in
            let token = Self.token()
            let response = try await env.request("/v1/orders", token: token, headers: Self.spoofed)
            #expect(response.status == 200)
            let sent = Self.assertions(in: env.upstream.last)
            #expect(sent.count == 1 && sent.first != "forged", "\(sent)")
            let verdict = try await verifier.check(sent.first, with: env)
            let claims = try #require(verdict.claims, "\(verdict)")
            let now = Int64(Date().timeIntervalSince1970)
            let iat = try #require(claims["iat"]?.integerValue)
            #expect(abs(iat - now) <= 2)
            #expect(claims["exp"]?.integerValue == iat + 60)
            #expect(claims["iss"] == .string(Self.issuer))
            #expect(claims["aud"] == .string("http://127.0.0.1:\(env.upstream.port)"))
            #expect(claims["sub"] == .string("user-1"))
            #expect(claims["provider"] == .string("test"))
            #expect(claims["token_iss"] == .string(Claims.issuer))
            #expect(claims["email"] == .string("ada@example.com"))
            #expect(claims["groups"] == .array([.string("admins"), .string("ops")]))
            #expect(claims["jti"]?.stringValue.map { Base64URL.decode(Array($0.utf8))?.count == 16 } == true, "\(claims)")
            #expect(claims["cnf"] == nil && claims["email_verified"] == nil, "only what is configured: \(claims)")
            #expect(verdict.header["typ"] == .string("JWT") && verdict.header["alg"] == .string("ES256"), "\(verdict)")
            // The kid is the key's RFC 7638 thumbprint, the one the JWKS lists.
            let jwks = try await env.admin("/.well-known/jwks.json")
            let keys = try #require(try StrictJSON.parse(Array(jwks.body.utf8)).objectValue?["keys"]?.arrayValue)
            #expect(keys.count == 1)
            let published = try #require(keys.first?.objectValue)
            var thumbprinted = published
            for member in ["kid", "alg", "use"] { thumbprinted[member] = nil }
            #expect(verdict.header["kid"] == published["kid"] && published["kid"]?.stringValue == JWKThumbprint.sha256(of: thumbprinted))
            #expect(published["d"] == nil, "never the private half: \(published)")
        }
    }

    @Test func theKeysArePublishedOnBothPortsWithAValidator() async throws {
        try await Self.run { env, _, _ in
            let admin = try await env.admin("/.well-known/jwks.json")
            let client = try await env.request("/.gatehouse/jwks.json")
            #expect(admin.status == 200 && client.status == 200)
            #expect(admin.body == client.body)
            #expect(admin.headers.first(name: "cache-control") == "public, max-age=300")
            let etag = try #require(admin.headers.first(name: "etag"))
            #expect(client.headers.first(name: "etag") == etag && etag.hasPrefix("\""))
            let notModified = try await env.request("/.gatehouse/jwks.json", headers: [("If-None-Match", "\"other\", \(etag)")])
            #expect(notModified.status == 304 && notModified.body.isEmpty)
            #expect(notModified.headers.first(name: "content-length") == nil)
            let changed = try await env.request("/.well-known/jwks.json", headers: [("If-None-Match", "\"other\"")], port: env.adminPort)
            #expect(changed.status == 200)
            #expect(try await env.request("/.gatehouse/jwks.json", method: .POST).status == 405)
        }
        // Without [assertion] there is nothing to publish.
        try await TestEnvironment.run { (env: TestEnvironment) async throws in
            #expect(try await env.request("/.gatehouse/jwks.json").status == 404)
            #expect(try await env.admin("/.well-known/jwks.json").status == 404)
        }
    }

    /// A01, A06: both doors, both upstream protocols; the client's header in any spelling never arrives; no assertion
    /// without a verified identity.
    @Test(arguments: [false, true])
    func bothDoorsAndBothUpstreamProtocolsCarryItAndNothingElse(upstreamHTTP2: Bool) async throws {
        try await Self.run(upstreamHTTP2: upstreamHTTP2) { env, verifier, _ in
            let token = Self.token()
            var curlSpoofs: [String] = []
            for (name, value) in Self.spoofed { curlSpoofs += ["-H", "\(name): \(value)"] }
            let overHTTP2 = try await HTTP2Tests.curl(
                ["--http2-prior-knowledge", "-H", "Authorization: Bearer \(token)"] + curlSpoofs + [env.baseURL + "/v1/orders"])
            #expect(overHTTP2.version == "2" && overHTTP2.status == 200, "\(overHTTP2)")
            let fromHTTP2 = Self.assertions(in: env.upstream.last)
            #expect(fromHTTP2.count == 1, "\(env.upstream.last?.headers ?? [])")
            #expect(try await verifier.check(fromHTTP2.first, with: env).claims?["sub"] == .string("user-1"))
            let overHTTP1 = try await env.request("/v1/orders", token: token, headers: Self.spoofed)
            #expect(overHTTP1.status == 200)
            let fromHTTP1 = Self.assertions(in: env.upstream.last)
            #expect(fromHTTP1.count == 1 && fromHTTP1 != ["forged"])
            #expect(try await verifier.check(fromHTTP1.first, with: env).claims?["sub"] == .string("user-1"))
            // Not authenticated: a public route (token or not), a guest on an optional route. The client's spellings are still removed.
            for (path, bearer) in [("/public/x", nil), ("/public/x", token), ("/guest/x", nil)] as [(String, String?)] {
                #expect(try await env.request(path, token: bearer, headers: Self.spoofed).status == 200)
                #expect(Self.assertions(in: env.upstream.last).isEmpty, "\(path): \(env.upstream.last?.headers ?? [])")
                let viaHTTP2 = try await HTTP2Tests.curl(["--http2-prior-knowledge"] + curlSpoofs + [env.baseURL + path])
                #expect(viaHTTP2.status == 200 && Self.assertions(in: env.upstream.last).isEmpty, "\(path) over HTTP/2")
            }
        }
    }

    @Test func gRPCMetadataCarriesItInLowerCase() async throws {
        let keys = try KeyFiles()
        defer { keys.remove() }
        let signingKey = try AssertionKey.load(file: try keys.p256("signing.pem"), needs: .privateKey)
        try await GRPCTests.run(configure: { configuration, _ in
            configuration.assertion = AssertionSettings(issuer: Self.issuer, audience: "orders", signingKey: signingKey)
        }) { env, _ in
            let result = try await GRPCCallResult.call(
                port: env.port, "unary", token: GRPCTests.token(), metadata: [("x-gatehouse-assertion", "forged"), ("x_gatehouse_assertion", "forged")])
            #expect(result.code == "OK", "\(result.object)")
            let seen = GRPCCallResult.echoedMetadata(try #require(result.responses.first))
            let sent = seen.filter { Self.folded($0.0) == "x-gatehouse-assertion" }
            #expect(sent.count == 1 && sent.first?.0 == "x-gatehouse-assertion" && sent.first?.1 != "forged", "\(seen)")
            let verifier = try await Verifier.start(jwksURL: env.baseURL + "/.gatehouse/jwks.json", audience: "orders")
            defer { verifier.stop() }
            #expect(try await verifier.check(sent.first?.1, with: env).claims?["sub"] == .string("user-1"))
        }
    }

    @Test func anExtAuthzAllowAndTheCheckEndpointCarryIt() async throws {
        try await Self.run(configure: { configuration in
            configuration.extAuthz = ExtAuthzSettings(address: SocketAddressSetting(host: "127.0.0.1", port: 0))
        }) { env, verifier, _ in
            let port = try #require(env.gatehouse.extAuthzAddress?.port)
            let answers = try await ExtAuthzTests.call(port, [
                ExtAuthzTests.check("valid", headers: [("authorization", "Bearer \(Self.token())"), ("x_gatehouse_assertion", "forged")]),
            ])
            let valid = try #require(answers["valid"])
            #expect(valid.allowed == true, "\(valid)")
            let set = valid.values("x-gatehouse-assertion")
            #expect(set.count == 1 && valid.remove.contains("x_gatehouse_assertion"), "\(valid)")
            #expect(try await verifier.check(set.first, with: env).claims?["sub"] == .string("user-1"))
            let check = try await env.request("/.gatehouse/check", token: Self.token())
            #expect(check.status == 200)
            let answered = try #require(check.headers.first(name: "x-gatehouse-assertion"))
            #expect(try await verifier.check(answered, with: env).claims?["email"] == .string("ada@example.com"))
        }
    }

    /// Through a real Envoy asking Gatehouse (both protocols, deploy/envoy's `allowed_upstream_headers`): the app gets
    /// Gatehouse's assertion, never the client's.
    @Test(arguments: ["grpc", "http"])
    func throughEnvoyTheAppGetsGatehousesAssertion(_ mode: String) async throws {
        let keys = try KeyFiles()
        defer { keys.remove() }
        let signingKey = try AssertionKey.load(file: try keys.p256("signing.pem"), needs: .privateKey)
        try await ExtAuthzEnvoyTests.run(mode: mode, configure: { configuration in
            configuration.assertion = AssertionSettings(issuer: Self.issuer, audience: "orders", signingKey: signingKey)
        }) { env, envoy in
            let allowed = try await ExtAuthzEnvoyTests.get(
                env, port: envoy, "/v1/orders", headers: [("Authorization", "Bearer \(Self.token())"), ("x-gatehouse-assertion", "forged")])
            #expect(allowed.status == 200, "\(mode): \(allowed.body)")
            let sent = Self.assertions(in: env.upstream.last)
            #expect(sent.count == 1 && sent != ["forged"], "\(mode): \(env.upstream.last?.headers ?? [])")
            let verifier = try await Verifier.start(jwksURL: "http://127.0.0.1:\(env.adminPort)/.well-known/jwks.json", audience: "orders")
            defer { verifier.stop() }
            #expect(try await verifier.check(sent.first, with: env).claims?["sub"] == .string("user-1"), "\(mode)")
        }
    }

    @Test func theExpiryIsNeverLaterThanTheTokensOwn() async throws {
        try await Self.run { env, verifier, _ in
            let token = Self.token(lifetime: 20)
            let tokenExpiry = try #require(Self.payload(of: token)?["exp"]?.integerValue)
            #expect(try await env.request("/v1/orders", token: token).status == 200)
            let claims = try #require(try await verifier.check(Self.assertions(in: env.upstream.last).first, with: env).claims)
            #expect(claims["exp"]?.integerValue == tokenExpiry, "\(claims)")
        }
    }

    /// A sender-constrained token: its proven binding (`cnf.jkt`) goes into the assertion, nothing else of its `cnf`.
    @Test func aDPoPBoundTokensBindingIsCarried() async throws {
        try await Self.run { env, verifier, _ in
            let client = TestDPoPKey()
            let token = client.boundToken(extra: ["cnf": .object(["jkt": .string(client.thumbprint), "unchecked": .string("x")])])
            let response = try await env.request(
                "/v1/orders", headers: [("Authorization", "DPoP \(token)"), ("DPoP", client.proof("GET", env.baseURL + "/v1/orders", token: token))])
            #expect(response.status == 200, "\(response.body)")
            let claims = try await verifier.check(Self.assertions(in: env.upstream.last).first, with: env).claims
            #expect(claims?["cnf"] == .object(["jkt": .string(client.thumbprint)]), "\(String(describing: claims))")
        }
    }

    @Test func eddsaKeysSignAssertionsToo() async throws {
        try await Self.run(keyFile: { try $0.ed25519("signing.pem") }) { env, verifier, _ in
            #expect(try await env.request("/v1/orders", token: Self.token()).status == 200)
            let verdict = try await verifier.check(Self.assertions(in: env.upstream.last).first, with: env)
            #expect(verdict.claims?["sub"] == .string("user-1"), "\(verdict)")
            #expect(verdict.header["alg"] == .string("EdDSA"))
        }
    }

    // MARK: - Cost

    /// One signature serves every request of a token, on any connection and both doors (when it is signed again:
    /// AssertionSignerTests, on a clock of its own).
    @Test func oneSignatureServesManyRequestsOfOneToken() async throws {
        try await Self.run { (env: TestEnvironment, _: Verifier, _: KeyFiles) async throws in
            let token = Self.token()
            #expect(try await Self.signatures(env) == 0)
            for _ in 0..<10 { #expect(try await env.request("/v1/orders", token: token).status == 200) }
            for _ in 0..<3 {
                #expect(try await HTTP2Tests.curl(["--http2-prior-knowledge", "-H", "Authorization: Bearer \(token)", env.baseURL + "/v1/x"]).status == 200)
            }
            let sent = Set(env.upstream.requests.flatMap { Self.assertions(in: $0) })
            #expect(sent.count == 1 && env.upstream.requestCount == 13, "\(sent)")
            #expect(try await Self.signatures(env) == 1)
            #expect(try await env.request("/v1/orders", token: Self.token(subject: "user-2")).status == 200)
            #expect(try await Self.signatures(env) == 2)
        }
    }

    // MARK: - Keys: rotation and refusals

    /// The rotation of docs/reference.md §15, walked through reloads, with a verifier that keeps the JWKS it fetched
    /// for its max-age (1 s here for 300 s) and, like PyJWT, does not refetch at once for an unknown kid.
    @Test func aKeyRotationThroughReloadsKeepsEveryAssertionVerifiable() async throws {
        let path = NSTemporaryDirectory() + "gatehouse-assertion-" + UUID().uuidString + ".toml"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let old = try KeyFiles()
        defer { old.remove() }
        let oldKey = try old.p256("old.pem")
        try await Self.run(keyFile: { _ in oldKey }, configurationPath: path) { env, _, keys in
            let verifier = try await Verifier.start(
                jwksURL: env.baseURL + "/.gatehouse/jwks.json", audience: "http://127.0.0.1:\(env.upstream.port)", lifespan: 1)
            defer { verifier.stop() }
            let nextKey = try keys.p256("next.pem")
            func reload(signing: String, published: [String]) async throws {
                let files = published.map { "\"\($0)\"" }.joined(separator: ", ")
                try (env.minimalTOML + """

                    [assertion]
                    issuer = "\(Self.issuer)"
                    signing_key_file = "\(signing)"
                    published_key_files = [\(files)]
                    """).write(toFile: path, atomically: true, encoding: .utf8)
                #expect(await env.gatehouse.hangUp().isEmpty)
            }
            func assertion(_ token: String) async throws -> String? {
                #expect(try await env.request("/v1/orders", token: token).status == 200)
                return Self.assertions(in: env.upstream.last).first
            }
            let token = Self.token()
            let byOld = try await assertion(token)
            let first = try await verifier.check(byOld, with: env)
            let oldKeyID = try #require(first.header["kid"])
            #expect(first.claims != nil && first.fetches == (1, 1), "\(first)")
            // 1. Publish the next key beside the signing one; assertions are still signed with the old one.
            try await reload(signing: oldKey, published: [nextKey])
            let jwks = try await env.request("/.gatehouse/jwks.json").body
            #expect(try StrictJSON.parse(Array(jwks.utf8)).objectValue?["keys"]?.arrayValue?.count == 2, "\(jwks)")
            #expect(try await verifier.check(try await assertion(token), with: env).header["kid"] == oldKeyID)
            // 2. Wait until verifiers have fetched the keys again (max-age): awaited on the verifier itself.
            let deadline = Date().addingTimeInterval(10)
            var refreshed = first
            while refreshed.fetches.pyjwt < 2 || refreshed.fetches.jwcrypto < 2, Date() < deadline {
                refreshed = try await verifier.check(byOld, with: env)
                #expect(refreshed.claims != nil, "\(refreshed)")
            }
            #expect(refreshed.fetches == (2, 2), "\(refreshed)")
            // 3. Swap which one signs: the next request is signed with the next key at once, and verifies without a fetch.
            try await reload(signing: nextKey, published: [oldKey])
            let byNext = try await assertion(token)
            let verdict = try await verifier.check(byNext, with: env)
            #expect(verdict.claims != nil && verdict.header["kid"] != oldKeyID, "\(verdict)")
            #expect(verdict.fetches == (2, 2), "\(verdict)")
            #expect(try await verifier.check(byOld, with: env).claims != nil, "assertions signed before the swap still verify")
            // 4. After `lifetime`, drop the old key. A verifier that fetches the keys now refuses what the old key signed (A04).
            try await reload(signing: nextKey, published: [])
            let fresh = try await Verifier.start(
                jwksURL: env.baseURL + "/.gatehouse/jwks.json", audience: "http://127.0.0.1:\(env.upstream.port)")
            defer { fresh.stop() }
            #expect(try await fresh.check(byOld, with: env).refusedByBoth)
            #expect(try await fresh.check(byNext, with: env).claims != nil)
        }
    }

    /// A02, A03, A05: what an upstream that pins audience, issuer and algorithms refuses.
    @Test func aVerifierRefusesAnotherAudienceAnExpiredOneAndAlgorithmConfusion() async throws {
        try await Self.run { env, verifier, keys in
            #expect(try await env.request("/v1/orders", token: Self.token()).status == 200)
            let genuine = try #require(Self.assertions(in: env.upstream.last).first)
            #expect(try await verifier.check(genuine, with: env).claims != nil)
            // Replayed to a service of another audience.
            let other = try await Verifier.start(jwksURL: env.baseURL + "/.gatehouse/jwks.json", audience: "http://payments.internal")
            defer { other.stop() }
            #expect(try await other.check(genuine, with: env).refusedByBoth)
            // Expired, though signed by the published key itself.
            let signingKey = try AssertionKey.load(file: keys.folder + "/signing.pem", needs: .privateKey)
            let parts = genuine.split(separator: ".")
            var claims = try #require(Self.payload(of: genuine))
            let now = Int64(Date().timeIntervalSince1970)
            claims["iat"] = .number(String(now - 120))
            claims["exp"] = .number(String(now - 60))
            let input = parts[0] + "." + Base64URL.encode(JSONValue.object(claims).compactJSON.utf8)
            let expired = input + "." + Base64URL.encode(try signingKey.sign(Array(input.utf8)))
            #expect(try await verifier.check(expired, with: env).refusedByBoth)
            // alg confusion: HS256 keyed with the public key as published, and `none`.
            let jwks = try await env.request("/.gatehouse/jwks.json").body
            let publicJWK = try #require(try StrictJSON.parse(Array(jwks.utf8)).objectValue?["keys"]?.arrayValue?.first?.objectValue)
            let kid = try #require(publicJWK["kid"])
            func forged(alg: String, secret: [UInt8]?) -> String {
                let header = Base64URL.encode(JSONValue.object(["alg": .string(alg), "kid": kid, "typ": .string("JWT")]).compactJSON.utf8)
                let input = header + "." + parts[1]
                guard let secret else { return input + "." }
                let mac = HMAC<SHA256>.authenticationCode(for: Array(input.utf8), using: SymmetricKey(data: secret))
                return input + "." + Base64URL.encode(Array(mac))
            }
            #expect(try await verifier.check(forged(alg: "HS256", secret: Array(JSONValue.object(publicJWK).compactJSON.utf8)), with: env).refusedByBoth)
            let pem = try P256.Signing.PublicKey(x963Representation: [0x04] + (Base64URL.decode(Array((publicJWK["x"]?.stringValue ?? "").utf8)) ?? [])
                + (Base64URL.decode(Array((publicJWK["y"]?.stringValue ?? "").utf8)) ?? [])).pemRepresentation
            #expect(try await verifier.check(forged(alg: "HS256", secret: Array(pem.utf8)), with: env).refusedByBoth)
            #expect(try await verifier.check(forged(alg: "none", secret: nil), with: env).refusedByBoth)
        }
    }

    // MARK: - Configuration

    @Test func checkConfigSaysWhatIsWrongWithAKeyAtItsPath() throws {
        let keys = try KeyFiles()
        defer { keys.remove() }
        func issues(_ assertion: String) -> [String] {
            let toml = Contract.toml(upstreamPort: 9, jwksURI: "https://issuer.test/jwks") + "\n[assertion]\n" + assertion
            do {
                _ = try Configuration.parse(toml: toml)
                return []
            } catch {
                return error.issues.map(\.description)
            }
        }
        let p384 = try keys.write("p384.pem", P384.Signing.PrivateKey().pemRepresentation)
        let p256 = P256.Signing.PrivateKey()
        let publicOnly = try keys.write("public.pem", p256.publicKey.pemRepresentation)
        let rsa = try keys.write("rsa.pem", try _RSA.Signing.PrivateKey(keySize: .bits2048).pemRepresentation)
        let cases: [(String, String)] = [
            ("issuer = \"i\"\nsigning_key_file = \"\(keys.folder)/missing.pem\"", "assertion.signing_key_file: no such file"),
            ("issuer = \"i\"\nsigning_key_file = \"\(p384)\"", "assertion.signing_key_file: an EC P-384 key"),
            ("issuer = \"i\"\nsigning_key_file = \"\(rsa)\"", "assertion.signing_key_file: an RSA key"),
            ("issuer = \"i\"\nsigning_key_file = \"\(publicOnly)\"", "assertion.signing_key_file: a public key"),
            ("signing_key_file = \"\(try keys.p256("ok.pem"))\"", "assertion.issuer: required"),
            ("issuer = \"i\"", "assertion.signing_key_file: required"),
            ("issuer = \"i\"\nsigning_key_file = \"\(try keys.p256("ok2.pem"))\"\nlifetime = \"11m\"", "assertion.lifetime: must be from 1s to 10m"),
            ("issuer = \"i\"\nsigning_key_file = \"\(try keys.p256("ok3.pem"))\"\nclaims = [\"exp\"]", "assertion.claims: \"exp\" is set by Gatehouse"),
            ("issuer = \"i\"\nsigning_key_file = \"\(try keys.p256("ok4.pem"))\"\npublished_key_files = [\"\(p384)\"]", "assertion.published_key_files: element 0"),
        ]
        // A07: the client's spellings of the header are removed, so it may not be one HTTP, the proxy or Gatehouse depends on.
        let ok = try keys.p256("ok5.pem")
        for header in ["Content_Length", "host", "Authorization", "Proxy-Assertion", "X-Auth-Provider", "x_auth_subject"] {
            let found = issues("issuer = \"i\"\nsigning_key_file = \"\(ok)\"\nheader = \"\(header)\"")
            #expect(found.contains { $0.hasPrefix("assertion.header: ") }, "\(header) -> \(found)")
        }
        #expect(issues("issuer = \"i\"\nsigning_key_file = \"\(ok)\"\nheader = \"X-Auth-Assertion\"").isEmpty)
        for (assertion, expected) in cases {
            let found = issues(assertion)
            #expect(found.contains { $0.hasPrefix(expected) }, "\(assertion) -> \(found)")
        }
        #expect(issues("issuer = \"i\"\nsigning_key_file = \"\(try keys.ed25519("ed.pem"))\"\npublished_key_files = [\"\(publicOnly)\"]").isEmpty)
    }
}
