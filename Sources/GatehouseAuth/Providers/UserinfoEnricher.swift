package import AsyncHTTPClient
package import Foundation
package import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
package import GatehouseSyntax
package import GatehouseConfig
package import GatehouseTokens
import GatehouseTelemetry
package import GatehouseVocabulary

/// Cognito `userinfo = true`: access tokens carry no email, name or picture, so they are fetched
/// from the pool's `/oauth2/userInfo` with the (already verified) access token and merged into the
/// claims the upstream sees. One call per token (single-flight), cached until the token's `exp`,
/// bounded in size. If the endpoint fails the request still goes through (the signature proved
/// who it is) without those attributes, and the operational log says why.
package final class UserinfoEnricher: Sendable {
    /// The identity with its userinfo attributes: at once (cached, or no endpoint), or once the endpoint answered.
    package typealias Outcome = Eventual<VerifiedIdentity>

    private struct State {
        var cache: BoundedTokenMap<(attributes: [String: JSONValue], expiry: Int64)>
        var inFlight: [TokenKey: EventLoopFuture<[String: JSONValue]>] = [:]
        var lastFailureLogged: NIODeadline?
    }

    static let maxDocumentBytes = 64 << 10
    static let failureRetryAfterSeconds: Int64 = 30
    /// Token attributes never taken from userinfo: identity and validity come from the signed token only.
    static let protectedClaims: Set<String> = ["iss", "sub", "aud", "exp", "nbf", "iat", "jti", "client_id", "token_use", "scope", "cognito:groups"]

    private let client: HTTPClient
    private let endpoints: [Int: URL]
    private let timeout: Duration
    private let logger: Logger
    private let state: NIOLockedValueBox<State>

    package init(client: HTTPClient, endpoints: [Int: URL], timeout: Duration, capacity: Int, logger: Logger) {
        self.client = client
        self.endpoints = endpoints
        self.timeout = timeout
        self.state = NIOLockedValueBox(State(cache: BoundedTokenMap(capacity: max(capacity, 1))))
        self.logger = logger
    }

    /// The providers (by index) with enrichment, from the configuration.
    package static func endpoints(for providers: [ProviderSettings]) -> [Int: URL] {
        var endpoints: [Int: URL] = [:]
        for (index, provider) in providers.enumerated() where provider.type == .cognito && provider.userinfo {
            if let url = provider.userinfoURI ?? provider.domain?.appendingPathComponent("oauth2/userInfo") { endpoints[index] = url }
        }
        return endpoints
    }

    func enrich(_ identity: VerifiedIdentity, token: Substring, now: Int64, on eventLoop: any EventLoop) -> Outcome {
        guard let endpoint = endpoints[identity.providerIndex] else { return .now(identity) }
        let key = TokenKey(token)
        enum Action { case cached([String: JSONValue]), join(EventLoopFuture<[String: JSONValue]>), start(EventLoopPromise<[String: JSONValue]>) }
        let action: Action = state.withLockedValue { state in
            if let entry = state.cache.value(for: key), entry.expiry > now { return .cached(entry.attributes) }
            if let future = state.inFlight[key] { return .join(future) }
            let promise = eventLoop.makePromise(of: [String: JSONValue].self)
            state.inFlight[key] = promise.futureResult
            return .start(promise)
        }
        switch action {
        case .cached(let attributes):
            return .now(Self.merging(attributes, into: identity))
        case .join(let future):
            let joined = TraceScope.span("gatehouse.userinfo", attributes: [("gatehouse.provider", .string(identity.providerName)),
                                         ("gatehouse.joined", .bool(true))], around: future.hop(to: eventLoop))
            return .later(joined.map { Self.merging($0, into: identity) })
        case .start(let promise):
            fetch(endpoint, token: token, subject: identity.subject, on: eventLoop).whenComplete { result in
                let attributes = (try? result.get()) ?? [:]
                // A failure is remembered briefly too, so a down endpoint costs one wait per token, not one per request.
                let expiry = result.isSuccess ? identity.expiry : min(identity.expiry, now + Self.failureRetryAfterSeconds)
                self.state.withLockedValue { state in
                    state.inFlight[key] = nil
                    state.cache.insert((attributes, expiry), for: key)
                }
                if case .failure(let error) = result { self.logFailure(error, endpoint: endpoint) }
                promise.succeed(attributes)
            }
            let fetched = TraceScope.span("gatehouse.userinfo", attributes: [("gatehouse.provider", .string(identity.providerName))],
                                          around: promise.futureResult)
            return .later(fetched.map { Self.merging($0, into: identity) })
        }
    }

    private func fetch(_ endpoint: URL, token: Substring, subject: String?, on eventLoop: any EventLoop) -> EventLoopFuture<[String: JSONValue]> {
        let request: HTTPClient.Request
        do {
            request = try HTTPClient.Request(url: endpoint, method: .GET, headers: ["Authorization": "Bearer \(token)", "Accept": "application/json"])
        } catch {
            return eventLoop.makeFailedFuture(error)
        }
        let deadline = NIODeadline.now() + TimeAmount(timeout)
        return client.execute(
            request: request, delegate: ResponseAccumulator(request: request, maxBodySize: Self.maxDocumentBytes),
            eventLoop: .delegate(on: eventLoop), deadline: deadline
        ).futureResult.flatMapThrowing { response in
            guard response.status == .ok else { throw JWKSFetcher.FetchError("HTTP \(response.status.code)") }
            guard case .object(let document)? = try? StrictJSON.parse(Array(buffer: response.body ?? ByteBuffer())) else {
                throw JWKSFetcher.FetchError("response is not a JSON object")
            }
            // OpenID Connect Core §5.3.2: a userinfo answer for another subject must not be used.
            guard document["sub"]?.stringValue == subject else { throw JWKSFetcher.FetchError("userinfo sub does not match the token") }
            return document
        }
    }

    /// Token claims win; userinfo only adds what the token lacks. `email_verified` and
    /// `phone_number_verified` arrive as strings from Cognito and are forwarded as booleans.
    package static func merging(_ attributes: [String: JSONValue], into identity: VerifiedIdentity) -> VerifiedIdentity {
        guard !attributes.isEmpty else { return identity }
        var claims = identity.claims
        for (name, value) in attributes where claims[name] == nil && !protectedClaims.contains(name) {
            switch value {
            case .string("true") where name.hasSuffix("_verified"): claims[name] = .bool(true)
            case .string("false") where name.hasSuffix("_verified"): claims[name] = .bool(false)
            default: claims[name] = value
            }
        }
        return identity.with(claims: claims)
    }

    private func logFailure(_ error: any Error, endpoint: URL) {
        let now = NIODeadline.now()
        let shouldLog = state.withLockedValue { state -> Bool in
            if let last = state.lastFailureLogged, now - last < .seconds(60) { return false }
            state.lastFailureLogged = now
            return true
        }
        guard shouldLog else { return }
        logger.warning("userinfo enrichment failed; forwarding without profile attributes", metadata: [
            "gatehouse.endpoint": "\(endpoint)", "gatehouse.error": "\(error)",
        ])
    }
}

extension Result {
    fileprivate var isSuccess: Bool {
        if case .success = self { return true }
        return false
    }
}
