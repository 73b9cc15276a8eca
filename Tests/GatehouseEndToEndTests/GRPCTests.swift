import Foundation
@testable import Gatehouse
import Testing
import GatehouseSyntax
import GatehouseConfig
import GatehouseTokens
import GatehouseVocabulary

/// gRPC through Gatehouse end to end: a grpcio client and server (Resources/grpc) on loopback,
/// Gatehouse between them speaking HTTP/2 both ways. Refusals must be what gRPC libraries
/// understand: a status with the message, never a protocol error.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct GRPCTests {
    static let unary = "/gatehouse.test.Echo/Unary"

    /// Gatehouse in front of the echo server, over HTTP/2.
    static func run<T: Sendable>(
        waitForKeys: Bool = true,
        configure: @escaping (inout Configuration, TestJWKSServer) -> Void = { _, _ in },
        _ body: @escaping (TestEnvironment, TestGRPCServer) async throws -> T
    ) async throws -> T {
        try await TestGRPCServer.with { server in
            try await TestEnvironment.run(waitForKeys: waitForKeys, configure: { configuration, jwks in
                configuration.upstream.url = URL(string: "http://127.0.0.1:\(server.port)")!
                configuration.upstream.protocolVersion = .http2
                configuration.upstream.timeout = .seconds(5)
                configure(&configuration, jwks)
            }) { env in try await body(env, server) }
        }
    }

    static func token(_ claims: [String: JSONValue] = Claims.valid()) -> String { TestSigner.ec.token(claims: claims) }

    @Test func unaryCallCarriesTheVerifiedIdentityAndNoSmuggledOne() async throws {
        try await Self.run { env, _ in
            let result = try await GRPCCallResult.call(
                port: env.port, "unary", token: Self.token(),
                metadata: [("x-auth-subject", "admin"), ("x-auth_provider", "evil"), ("x-auth-claims", "e30")])
            #expect(result.code == "OK", "\(result.object)")
            let seen = GRPCCallResult.echoedMetadata(try #require(result.responses.first))
            func values(_ name: String) -> [String] { seen.filter { $0.0 == name }.map(\.1) }
            #expect(values("x-auth-subject") == ["user-1"])
            #expect(values("x-auth-provider") == ["test"])
            #expect(values("x-auth-email") == ["ada@example.com"])
            #expect(values("x-auth-claims").count == 1 && values("x-auth-claims") != ["e30"])
            #expect(!seen.contains { $0.0 == "x-auth_provider" })
            #expect(values("x-forwarded-for") == ["127.0.0.1"])
            // What the upstream said after its answer reaches the client: its trailers, and the request id.
            #expect(result.trailing("x-upstream-trailer") == "kept")
            #expect(result.initial("x-request-id")?.isEmpty == false)
            #expect(env.failureLog.isEmpty)
        }
    }

    @Test func streamingCallsFlowMessageByMessage() async throws {
        try await Self.run { env, _ in
            let token = Self.token()
            let server = try await GRPCCallResult.call(port: env.port, "server-stream", token: token, options: ["--request", "6:50"])
            #expect(server.code == "OK", "\(server.object)")
            #expect(server.responses.count == 6)
            let client = try await GRPCCallResult.call(
                port: env.port, "client-stream", token: token, options: ["--messages", "40", "--message-bytes", "65536"])
            #expect(client.code == "OK", "\(client.object)")
            let summary = try StrictJSON.parse(Array(try #require(client.responses.first).utf8)).objectValue
            #expect(summary?["count"] == .number("40"))
            #expect(summary?["bytes"] == .number(String(40 * 65536)))
            let bidi = try await GRPCCallResult.call(
                port: env.port, "bidi", token: token, options: ["--messages", "8", "--interval-ms", "20"])
            #expect(bidi.code == "OK", "\(bidi.object)")
            #expect(bidi.responses.count == 8)
            #expect(bidi.responses.first?.hasPrefix("echo:m0") == true)
        }
    }

    @Test func refusedCallsGetUnauthenticatedWithTheReason() async throws {
        try await Self.run { env, _ in
            let now = Int64(Date().timeIntervalSince1970)
            var expiredClaims = Claims.valid()
            expiredClaims["exp"] = .number(String(now - 3600))
            let forged = TestSigner.ec.with(keyID: "ec-1").token(claims: Claims.valid()).dropLast(4) + "AAAA"
            let cases: [(token: String?, reason: FailureReason)] = [
                (nil, .missingToken), (Self.token(expiredClaims), .expired), (String(forged), .badSignature),
                ("not-a-jwt", .malformedToken),
            ]
            for (index, (token, reason)) in cases.enumerated() {
                let result = try await GRPCCallResult.call(port: env.port, "unary", token: token)
                #expect(result.code == "UNAUTHENTICATED", "\(reason): \(result.object)")
                #expect(result.details?.hasPrefix(reason.rawValue + ": ") == true, "\(result.details ?? "nil")")
                #expect(result.responses.isEmpty)
                let line = env.failureLog.dropFirst(index).first
                #expect(line?["reason"] == .string(reason.rawValue))
                #expect(line?["path"] == .string(Self.unary))
                #expect(line?["status"] == .number("401"))
            }
            #expect(env.failureLog.count == cases.count)
        }
    }

    @Test func missingScopeIsPermissionDenied() async throws {
        try await Self.run(configure: { configuration, _ in
            var route = RouteSettings(match: .path(Self.unary))
            route.scopes = ["orders:admin"]
            configuration.routes = [route]
        }) { env, _ in
            let result = try await GRPCCallResult.call(port: env.port, "unary", token: Self.token())
            #expect(result.code == "PERMISSION_DENIED", "\(result.object)")
            #expect(result.details?.hasPrefix("insufficient_scope: ") == true)
            #expect(env.failureLog.first?["status"] == .number("403"))
        }
    }

    @Test func unavailableKeysAndUpstreamAreUnavailable() async throws {
        let closed = try await freeLoopbackPort()
        // Keys that cannot be had: 503 keys_unavailable, gRPC UNAVAILABLE.
        try await Self.run(waitForKeys: false, configure: { configuration, _ in
            configuration.providers[0].jwksURI = URL(string: "http://127.0.0.1:\(closed)/jwks.json")!
        }) { env, _ in
            let result = try await GRPCCallResult.call(port: env.port, "unary", token: Self.token())
            #expect(result.code == "UNAVAILABLE", "\(result.object)")
            #expect(result.details?.hasPrefix("keys_unavailable: ") == true)
            #expect(env.failureLog.first?["reason"] == .string("keys_unavailable"))
        }
        // An upstream that is not there: UNAVAILABLE, and nothing in the failure log.
        try await TestEnvironment.run(configure: { configuration, _ in
            configuration.upstream.url = URL(string: "http://127.0.0.1:\(closed)")!
            configuration.upstream.protocolVersion = .http2
        }) { env in
            let result = try await GRPCCallResult.call(port: env.port, "unary", token: Self.token())
            #expect(result.code == "UNAVAILABLE", "\(result.object)")
            #expect(env.failureLog.isEmpty)
        }
    }

    @Test func upstreamStatusesAndTrailersPassThrough() async throws {
        try await Self.run { env, _ in
            let result = try await GRPCCallResult.call(port: env.port, "fail", token: Self.token())
            #expect(result.code == "FAILED_PRECONDITION", "\(result.object)")
            #expect(result.details == "upstream says no")
            #expect(result.trailing("x-upstream-trailer") == "kept")
        }
    }

    @Test func aStreamOutlivesSeveralKeyRefreshes() async throws {
        try await Self.run(configure: { configuration, _ in
            configuration.jwks.minRefresh = .milliseconds(200)
            configuration.jwks.maxRefresh = .milliseconds(200)
        }) { env, _ in
            let fetchesBefore = env.jwks.fetchCount
            let result = try await GRPCCallResult.call(
                port: env.port, "server-stream", token: Self.token(), options: ["--request", "20:100", "--timeout", "20"])
            #expect(result.code == "OK", "\(result.object)")
            #expect(result.responses.count == 20)
            #expect(env.jwks.fetchCount - fetchesBefore >= 3, "JWKS fetched \(env.jwks.fetchCount - fetchesBefore) times")
        }
    }
}
