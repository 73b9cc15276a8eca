import Crypto
import Foundation
@testable import Gatehouse
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import GatehouseSyntax

/// The request core with a configuration and no socket: its keys from a persisted JWKS (`[jwks] cache_dir`, as after
/// a restart with the provider away), its time a fake clock, and a driver that does with the core's actions what a
/// door's does (`ExchangeDriving`) but keeps the records instead of counting and logging them.
final class CoreTestbed {
    static let issuer = "https://issuer.core.test"
    static let audience = "orders-api"
    static let keyID = "core-1"

    let gatehouse: Gatehouse
    let services: ProxyServices
    private let signingKey = P256.Signing.PrivateKey()
    private let directory: String
    /// The fake clock: where the events the driver sends say they happened.
    var now = NIODeadline.uptimeNanoseconds(1_000_000_000)

    init() async throws {
        directory = NSTemporaryDirectory() + "gatehouse-core-\(UUID().uuidString)"
        var provider = ProviderSettings(name: "core", type: .jwks)
        provider.issuer = Self.issuer
        provider.jwksURI = URL(string: "http://127.0.0.1:9/keys")!  // never fetched: the keys are the persisted ones
        provider.audiences = [Self.audience]
        var configuration = Configuration(upstream: UpstreamSettings(url: URL(string: "http://127.0.0.1:9")!), providers: [provider])
        configuration.jwks.cacheDirectory = directory
        configuration.routes = [
            RouteSettings(match: .prefix("/health")).with { $0.auth = .public },
            RouteSettings(match: .prefix("/maybe")).with { $0.auth = .optional },
            RouteSettings(match: .prefix("/admin")).with { $0.scopes = ["admin"] },
        ]
        let jwk = TokenFixtures.ecJWK(raw: Array(signingKey.publicKey.rawRepresentation), crv: "P-256", kid: Self.keyID)
        try PersistedKeySets(directory: directory).save(provider: "core", body: TokenFixtures.keySet([jwk]), fetchedAt: Date())
        gatehouse = try Gatehouse(configuration: configuration, logger: Logger(label: "core-test"), failureLog: .custom { _ in })
        guard gatehouse.keyStore.usePersistedKeys(provider: 0) else {
            await gatehouse.stop()
            throw Failure(description: "the persisted JWKS was not loaded")
        }
        services = gatehouse.makeServices(configuration)
    }

    func close() async {
        await gatehouse.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    // MARK: - Tokens

    func token(_ extra: [String: JSONValue] = [:], keyID: String = CoreTestbed.keyID, key: P256.Signing.PrivateKey? = nil) throws -> String {
        let now = Int64(Date().timeIntervalSince1970)
        var claims: [String: JSONValue] = [
            "iss": .string(Self.issuer), "aud": .string(Self.audience), "sub": .string("user-1"),
            "iat": .number(String(now - 10)), "exp": .number(String(now + 600)),
        ]
        claims.merge(extra) { _, new in new }
        let header = TokenFixtures.segment(#"{"alg":"ES256","typ":"JWT","kid":"\#(keyID)"}"#)
        let payload = Base64URL.encode(Array(JSONValue.object(claims).compactJSON.utf8))
        let signature = try (key ?? signingKey).signature(for: Array("\(header).\(payload)".utf8))
        return "\(header).\(payload).\(Base64URL.encode(signature.rawRepresentation))"
    }

    // MARK: - Driving the core

    /// What the core came to, and everything it recorded on the way.
    struct Outcome {
        var action: ExchangeStateMachine.Action
        var records: [ExchangeRecords]

        var status: UInt? {
            if case .send(let response) = action { return response.status.code }
            return nil
        }
        var response: LocalResponse? {
            if case .send(let response) = action { return response }
            return nil
        }
        var isForwarded: Bool {
            if case .forward = action { return true }
            return false
        }
        var rejections: [ExchangeRecords.Rejection] { records.compactMap(\.rejection) }
        var outcomes: [GatehouseMetrics.RequestOutcome] { records.compactMap(\.outcome?.outcome) }
        var reason: String? {
            guard let body = response?.body else { return nil }
            return (try? StrictJSON.parse(Array(body.utf8)).objectValue)?["reason"]?.stringValue
        }
    }

    /// A whole request in one read (head, end, the read's end), driven until the core answers, forwards or asks to
    /// read more; `decisionTakes` passes on the fake clock while the gatekeeper decides. `version` is the head's (the
    /// HTTP/2 door's heads say `.http2`). `ended: false`: the read carries no end (a body still coming).
    func run(
        _ core: inout ExchangeStateMachine, version: HTTPVersion = .http1_1, method: HTTPMethod = .GET, path: String, token: String? = nil,
        headers: [(String, String)] = [], body: ByteBuffer? = nil, ended: Bool = true, decisionTakes: TimeAmount = .zero
    ) async throws -> Outcome {
        var fields = [("host", "api.test")] + headers
        if let token { fields.append(("authorization", "Bearer \(token)")) }
        let head = HTTPRequestHead(version: version, method: method, uri: path, headers: HTTPHeaders(fields))
        var records: [ExchangeRecords] = []
        func recorded(_ action: ExchangeStateMachine.Action) -> ExchangeStateMachine.Action {
            if let taken = core.takeRecords() { records.append(taken) }
            return action
        }
        core.readBegan()
        var pending = [recorded(core.receivedHead(head, clientIP: "203.0.113.9", settings: services.exchange, recent: nil, now: now))]
        if let body { pending.append(recorded(core.receivedBody(body))) }
        if ended { pending.append(recorded(core.receivedEnd())) }
        pending.append(recorded(core.readEnded()))
        let eventLoop = MultiThreadedEventLoopGroup.singleton.next()
        while !pending.isEmpty {
            let action = pending.removeFirst()
            switch action {
            case .none, .retry:
                continue
            case .decide(let request, let recent, let generation):
                now = now + decisionTakes
                var decision = services.decide(request, recent: recent, now: Date(), on: eventLoop)
                while case .pending(let future) = decision { decision = try await future.get() }
                guard let verdict = decision.verdict else { throw Failure(description: "a pending decision's future completed pending") }
                pending.append(recorded(core.decided(verdict, generation: generation, now: now, wallClock: Int64(Date().timeIntervalSince1970))))
            case .signOut(let endpoint, let identity, let request, let body, let generation):
                let answer = services.signOut(endpoint, identity, request, body: body, on: eventLoop)
                pending.append(recorded(core.answered(try await answer.get(), generation: generation)))
            case .send, .forward, .readBody:
                return Outcome(action: action, records: records)
            }
        }
        return Outcome(action: .none, records: records)
    }
}

extension RouteSettings {
    func with(_ change: (inout RouteSettings) -> Void) -> RouteSettings {
        var copy = self
        change(&copy)
        return copy
    }
}
