import Crypto
public import Foundation
public import NIOCore
import NIOHTTP1
import NIOPosix
public import GatehouseSyntax
import GatehouseHTTP
import GatehouseProxy
import GatehouseExtAuthz

/// A tiny identity provider for `gatehouse demo`: an ES256 key of its own, its JWKS on loopback,
/// and tokens minted on request. Not for production: it signs whatever it is asked to.
public final class DemoIssuer: Sendable {
    public let issuer: String
    public let audience: String
    public let keyID = "demo-key-1"
    private let key = P256.Signing.PrivateKey()
    private let channel: any Channel

    /// Serves `GET /jwks.json` on `127.0.0.1:port` (0 picks a free port).
    public init(port: Int = 0, audience: String = "demo-api", group: any EventLoopGroup) async throws {
        let jwks = Self.jwks(for: key.publicKey, keyID: keyID)
        channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(StaticJSONHandler(body: jwks))
                }
            }
            .bind(host: "127.0.0.1", port: port).get()
        let boundPort = channel.localAddress?.port ?? port
        issuer = "http://127.0.0.1:\(boundPort)"
        self.audience = audience
    }

    public var jwksURL: URL { URL(string: issuer + "/jwks.json")! }  // safe: built from a loopback address

    /// A signed ES256 token for `subject`, valid for `lifetime`, with `extraClaims` merged in.
    public func mint(subject: String, lifetime: Duration = .seconds(3600), extraClaims: [String: JSONValue] = [:]) throws -> String {
        let now = Int64(Date().timeIntervalSince1970)
        var claims: [String: JSONValue] = [
            "iss": .string(issuer), "aud": .string(audience), "sub": .string(subject),
            "iat": .number(String(now)), "exp": .number(String(now + lifetime.components.seconds)),
        ]
        claims.merge(extraClaims) { _, new in new }
        let header = JSONValue.object(["alg": .string("ES256"), "typ": .string("JWT"), "kid": .string(keyID)])
        let signingInput = Base64URL.encode(Array(header.compactJSON.utf8)) + "." + Base64URL.encode(Array(JSONValue.object(claims).compactJSON.utf8))
        let signature = try key.signature(for: Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(Array(signature.rawRepresentation))
    }

    public func close() async {
        try? await channel.close()
    }

    static func jwks(for publicKey: P256.Signing.PublicKey, keyID: String) -> String {
        let raw = Array(publicKey.rawRepresentation)  // x || y
        let key = JSONValue.object([
            "kty": .string("EC"), "crv": .string("P-256"), "alg": .string("ES256"), "use": .string("sig"), "kid": .string(keyID),
            "x": .string(Base64URL.encode(raw[0..<32])), "y": .string(Base64URL.encode(raw[32..<64])),
        ])
        return JSONValue.object(["keys": .array([key])]).compactJSON
    }
}

/// Answers every request with one fixed JSON document.
final class StaticJSONHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart
    private let body: String

    init(body: String) { self.body = body }

    private var request: HTTPRequestHead?

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            request = head
        case .body:
            break
        case .end:
            guard let request else { return }
            self.request = nil
            WholeResponse(status: .ok, headers: ["Content-Type": "application/json", "Cache-Control": "max-age=300"], body: Array(body.utf8))
                .write(to: context, answering: request)
        }
    }
}
