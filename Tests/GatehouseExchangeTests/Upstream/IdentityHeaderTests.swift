import Foundation
import NIOCore
import NIOHTTP1
import Testing
import GatehouseExchange
import GatehouseTokens
import GatehouseConfig
import GatehouseSyntax
import GatehouseHTTP
import GatehousePolicy

/// The identity fields of a verified JWS: a claim signed as a plain string or a number whose text is its own header
/// value is written from the token's bytes as it is, any other through `HeaderValueEncoding` (issue 57). Every sink —
/// the HTTP/1.1 head's bytes, the HTTP/2 header list, the closure the Check and the decision endpoint read — gives what
/// `HeaderValueEncoding.encode` gives for the claim as `StrictJSON` reads it (docs/security.md P13).
struct IdentityHeaderTests {
    /// Claims of every kind the fast path must take or leave: plain strings, strings with escapes, spaces at the edges,
    /// `%`, non-ASCII, control characters, numbers, literals, `null`, arrays, objects, a nested path, an absent claim.
    static let payload = #"""
        {"iss":"https://issuer.core.test","sub":"user-1","email":"a\u0040b.test","name":" Edge ","pct":"100%",
        "cafe":"café","tab":"a\tb","ctl":"a\u0001b","num":12.50,"neg":-3e2,"flag":true,"off":false,"none":null,
        "list":["a","b,c",1],"obj":{"x":"y"},"inner":"in side","empty":"","nested":{"team":"blue"},"long":"\#(String(repeating: "z", count: 300))"}
        """#

    static let claimNames = [
        "sub", "email", "name", "pct", "cafe", "tab", "ctl", "num", "neg", "flag", "off", "none", "list", "obj", "inner", "empty",
        "nested.team", "long", "absent",
    ]

    /// A testbed whose provider maps each claim of `claimNames` to `X-C-<n>`.
    static func testbed() -> CoreTestbed {
        var provider = ProviderSettings(name: CoreTestbed.provider, type: .jwks)
        provider.issuer = "https://issuer.core.test"
        provider.jwksURI = URL(string: "http://127.0.0.1:9/keys")!  // safe: a constant URL, never fetched
        var configuration = Configuration(upstream: UpstreamSettings(url: URL(string: "http://127.0.0.1:9")!), providers: [provider])
        configuration.headers.mappings = claimNames.enumerated().map { HeaderMapping(name: "X-C-\($0.offset)", claimPath: $0.element) }
        return CoreTestbed(settings: ExchangeSettings(configuration, upstreamHead: UpstreamRequestHead(configuration), remembersTokens: true))
    }

    /// The identity as the verifier makes it: claims kept as signed, the payload segment a place in the token's bytes.
    static func signedIdentity() throws -> (VerifiedIdentity, encodedPayload: String) {
        let json = Array(payload.replacingOccurrences(of: "\n", with: "").utf8)
        let read = try LazyJSONObject.read(json)
        let claims = try #require(read)
        let encoded = Base64URL.encode(json)
        let token = Array("eyJhbGciOiJSUzI1NiJ9.\(encoded).c2ln".utf8)
        let start = 21
        let identity = VerifiedIdentity(
            providerIndex: 0, providerName: CoreTestbed.provider, claimSet: .signed(claims), payload: .inToken(start..<(start + encoded.utf8.count)),
            keyID: "core-1", expiry: Int64(Date().timeIntervalSince1970) + 600, token: token)
        return (identity, encoded)
    }

    /// What every sink must write: each claim through `HeaderValueEncoding`, from `StrictJSON`'s reading.
    static func expectedFields(encodedPayload: String) throws -> [(String, String)] {
        let parsed = try StrictJSON.parse(Array(payload.replacingOccurrences(of: "\n", with: "").utf8))
        let object = try #require(parsed.objectValue)
        var fields: [(String, String)] = []
        for (index, name) in claimNames.enumerated() {
            if let value = JSONValue.object(object).value(atPath: name), let encoded = HeaderValueEncoding.encode(value) {
                fields.append(("X-C-\(index)", encoded))
            }
        }
        return fields + [("X-Auth-Provider", CoreTestbed.provider), ("X-Auth-Claims", encodedPayload)]
    }

    @Test func aClaimWrittenFromTheSignedBytesIsWhatItsEncodingGives() throws {
        var testbed = Self.testbed()
        var core = ExchangeStateMachine(speaksGRPC: false, forwardsAtReadEnd: false)
        let (identity, encodedPayload) = try Self.signedIdentity()
        let outcome = testbed.run(&core, path: "/x", token: "t", verdict: { _ in .admit(.verified(identity)) })
        #expect(outcome.isForwarded)
        let request = try #require(core.inHand)
        let expected = try Self.expectedFields(encodedPayload: encodedPayload)
        #expect(expected.count > 15, "the claims the mappings name, most of them present")
        let head = testbed.settings.upstreamHead

        // The HTTP/1.1 head's bytes.
        var reused = ReusedBuffer()
        let written = head.make(request, admission: .verified(identity), at: 0, reusing: &reused, allocator: ByteBufferAllocator())
        let text = String(buffer: written.bytes)
        let http1 = text.split(separator: "\r\n").compactMap { line -> (String, String)? in
            guard let colon = line.firstIndex(of: ":"), line.hasPrefix("X-C-") || line.hasPrefix("X-Auth-") else { return nil }
            return (String(line[..<colon]), String(line[line.index(colon, offsetBy: 2)...]))
        }
        #expect(http1.map { $0.0 } == expected.map { $0.0 })
        #expect(http1.map { $0.1 } == expected.map { $0.1 })
        // The identity fields kept for the connection's next request are the same bytes.
        let kept = try #require(written.identityFields)
        #expect(text.contains(String(buffer: kept)))

        // The HTTP/2 header list.
        let http2 = head.makeHTTP2Head(request, admission: .verified(identity), at: 0, scheme: "http").allFields
            .filter { $0.name.hasPrefix("x-c-") || $0.name.hasPrefix("x-auth-") }
        #expect(http2.map { $0.name } == expected.map { $0.0.lowercased() })
        #expect(http2.map { $0.value } == expected.map { $0.1 })

        // A sink of `String`s (the Check's answer, the decision endpoint's).
        var handed = StringsSink()
        head.writeAdmissionHeaders(.verified(identity), at: 0, into: &handed)
        #expect(handed.fields.map { $0.0 } == expected.map { $0.0 })
        #expect(handed.fields.map { $0.1 } == expected.map { $0.1 })
    }
}

/// Identity fields as `String`s, in order.
private struct StringsSink: IdentityFieldSink {
    var fields: [(String, String)] = []

    mutating func add(_ name: String, _ value: String) { fields.append((name, value)) }
}
