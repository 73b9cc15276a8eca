import Foundation
import NIOCore
import NIOHTTP1
import GatehouseExchange
import GatehouseTokens
import GatehousePolicy
import GatehouseVocabulary
import GatehouseConfig
import GatehouseSyntax

/// The request core from plain values: its settings made from a configuration value (`ExchangeSettings`), the
/// gatekeeper's verdict given by the test (the core's input, as a driver reports it), its time a fake clock. No
/// socket, no event loop, no `Gatehouse`: what the core does with each event is checked with what it recorded for
/// the driver to count and log. (Which token earns which verdict is the gatekeeper's, tested through the core and
/// both doors by `FrontDoorTableTests`.)
struct CoreTestbed {
    static let provider = "core"

    let settings: ExchangeSettings
    /// The fake clock: where the events the test sends say they happened.
    var now = NIODeadline.uptimeNanoseconds(1_000_000_000)

    init() {
        var provider = ProviderSettings(name: Self.provider, type: .jwks)
        provider.issuer = "https://issuer.core.test"
        provider.jwksURI = URL(string: "http://127.0.0.1:9/keys")!  // safe: a constant URL, never fetched
        var configuration = Configuration(upstream: UpstreamSettings(url: URL(string: "http://127.0.0.1:9")!), providers: [provider])
        configuration.routes = [
            RouteSettings(match: .prefix("/health")).with { $0.auth = .public },
            RouteSettings(match: .prefix("/maybe")).with { $0.auth = .optional },
            RouteSettings(match: .prefix("/admin")).with { $0.scopes = ["admin"] },
        ]
        settings = ExchangeSettings(configuration, upstreamHead: UpstreamRequestHead(configuration), remembersTokens: true)
    }

    /// A testbed on other settings (a configuration of the test's).
    init(settings: ExchangeSettings) {
        self.settings = settings
    }

    /// An identity as the gatekeeper admits it with: a token of the configured provider, for `subject`.
    static func identity(subject: String = "user-1") -> VerifiedIdentity {
        let claims: [String: JSONValue] = ["iss": .string("https://issuer.core.test"), "sub": .string(subject)]
        return VerifiedIdentity(
            providerIndex: 0, providerName: provider, claims: claims, encodedPayload: Base64URL.encode(Array(JSONValue.object(claims).compactJSON.utf8)),
            keyID: "core-1", expiry: Int64(Date().timeIntervalSince1970) + 600)
    }

    /// The verdict a gatekeeper gives a request whose token is valid: a public route lets it through anonymously, an
    /// optional one without a token as a guest, a missing token is refused, any presented one verifies.
    static func admitting(_ request: ExchangeRequest) -> GateVerdict {
        if request.rule.auth == .public { return .admit(.anonymous) }
        guard request.presentedToken != nil else {
            return request.rule.auth == .optional ? .admit(.guest) : .reject(AuthFailure(.missingToken, "no bearer token"))
        }
        return .admit(.verified(identity()))
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
        var outcomes: [RequestOutcome] { records.compactMap(\.outcome?.outcome) }
        var reason: String? {
            guard let body = response?.body else { return nil }
            return (try? StrictJSON.parse(Array(body.utf8)).objectValue)?["reason"]?.stringValue
        }
    }

    /// A whole request in one read (head, body, end, the read's end), driven until the core answers, forwards, asks to
    /// read more or to sign out. A decision it asks for is `verdict`'s for the request, reported after `decisionTakes`
    /// on the fake clock. `version` is the head's (the HTTP/2 door's heads say `.http2`). `ended: false`: the read
    /// carries no end (a body still coming).
    mutating func run(
        _ core: inout ExchangeStateMachine, version: HTTPVersion = .http1_1, method: HTTPMethod = .GET, path: String, token: String? = nil,
        headers: [(String, String)] = [], body: ByteBuffer? = nil, ended: Bool = true, decisionTakes: TimeAmount = .zero,
        verdict: (ExchangeRequest) -> GateVerdict = CoreTestbed.admitting
    ) -> Outcome {
        var fields = [("host", "api.test")] + headers
        if let token { fields.append(("authorization", "Bearer \(token)")) }
        let head = HTTPRequestHead(version: version, method: method, uri: path, headers: HTTPHeaders(fields))
        var records: [ExchangeRecords] = []
        func recorded(_ action: ExchangeStateMachine.Action) -> ExchangeStateMachine.Action {
            if let taken = core.takeRecords() { records.append(taken) }
            return action
        }
        core.readBegan(now: now)
        var pending = [recorded(core.receivedHead(head, clientIP: "203.0.113.9", settings: settings, recent: nil, now: now))]
        if let body { pending.append(recorded(core.receivedBody(body))) }
        if ended { pending.append(recorded(core.receivedEnd())) }
        pending.append(recorded(core.readEnded()))
        while !pending.isEmpty {
            let action = pending.removeFirst()
            switch action {
            case .none, .ignored, .retry, .logOut:
                continue
            case .decide(let request, _, let generation):
                now = now + decisionTakes
                pending.append(recorded(core.decided(verdict(request), generation: generation, now: now, wallClock: 1_800_000_000)))
            case .send, .forward, .readBody, .signOut, .cut:
                return Outcome(action: action, records: records)
            }
        }
        return Outcome(action: .none, records: records)
    }
}

extension ExchangeStateMachine.Action {
    var isNone: Bool {
        if case .none = self { return true }
        return false
    }

    /// Why the core did not take the event; nil for any other answer.
    var ignored: ExchangeStateMachine.Ignored? {
        if case .ignored(let reason) = self { return reason }
        return nil
    }

    var decisionGeneration: Int? {
        if case .decide(_, _, let generation) = self { return generation }
        return nil
    }
}

extension RouteSettings {
    func with(_ change: (inout RouteSettings) -> Void) -> RouteSettings {
        var copy = self
        change(&copy)
        return copy
    }
}
