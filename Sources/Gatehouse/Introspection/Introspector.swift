import AsyncHTTPClient
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import Prometheus

/// One introspection provider's judge of opaque tokens, built so that its cache cannot be the hole:
/// - entries are keyed by the token's SHA-256, never the token, and hold the issuer's claims only:
///   route requirements and revocation are judged on every request (`Gatekeeper`), never cached;
/// - an active answer lives at most `min(cache_ttl, exp − now)`, an inactive one `negative_cache_ttl`;
///   an issuer that could not answer is not cached at all;
/// - concurrent requests with one token make one call (single-flight);
/// - at most `max_in_flight` calls per provider: the rest are answered 503 `introspection_busy` at once,
///   so a flood of random tokens never becomes a flood at the issuer;
/// - bounded memory (`cache_max_entries`, two generations).
final class Introspector: Sendable {
    let providerIndex: Int
    let provider: Provider
    private let settings: IntrospectionSettings
    private let client: IntrospectionClient
    private let leeway: Int64
    private let metrics: GatehouseMetrics
    private let logger: Logger
    private let failures = RateLimitedReport()
    private let state: NIOLockedValueBox<State>

    private enum Entry: Sendable {
        case active(VerifiedIdentity, until: Int64)
        case inactive(AuthFailure, until: Int64)
    }

    private struct State: Sendable {
        var cache: TokenKeyedGenerations<Entry>
        var inFlight: [TokenKey: EventLoopFuture<Result<VerifiedIdentity, AuthFailure>>] = [:]
        var endpoint: URL?
    }

    init(
        providerIndex: Int, provider: Provider, client: IntrospectionClient, leeway: Int64, metrics: GatehouseMetrics, logger: Logger
    ) {
        self.providerIndex = providerIndex
        self.provider = provider
        self.settings = provider.introspection ?? IntrospectionSettings()
        self.client = client
        self.leeway = leeway
        self.metrics = metrics
        self.logger = logger
        self.state = NIOLockedValueBox(State(cache: TokenKeyedGenerations(capacity: settings.cacheMaxEntries), endpoint: settings.endpoint))
    }

    /// Whether this provider takes the token (its `token_prefix`, if any).
    func takes(_ token: Substring) -> Bool {
        settings.tokenPrefix.map { token.hasPrefix($0) } ?? true
    }

    var hasTokenPrefix: Bool { settings.tokenPrefix != nil }

    /// Number of answers cached (for tests and the memory figure).
    var cachedCount: Int { state.withLockedValue { $0.cache.count } }

    func introspect(_ token: Substring, now: Int64, on eventLoop: any EventLoop) -> TokenVerifier.Verdict {
        let key = TokenKey.sha256(of: token)
        enum Step {
            case cached(Result<VerifiedIdentity, AuthFailure>)
            case join(EventLoopFuture<Result<VerifiedIdentity, AuthFailure>>)
            case busy
            case call(EventLoopPromise<Result<VerifiedIdentity, AuthFailure>>, URL?)
        }
        let step: Step = state.withLockedValue { state in
            switch state.cache.value(for: key) {
            case .active(let identity, let until) where until > now: return .cached(.success(identity))
            case .inactive(let failure, let until) where until > now: return .cached(.failure(failure))
            default: break
            }
            if let pending = state.inFlight[key] { return .join(pending) }
            guard state.inFlight.count < settings.maxInFlight else { return .busy }
            let promise = eventLoop.makePromise(of: Result<VerifiedIdentity, AuthFailure>.self)
            state.inFlight[key] = promise.futureResult
            return .call(promise, state.endpoint)
        }
        switch step {
        case .cached(let result):
            metrics.introspectionCache(provider: provider.name, hit: true)
            return .done(result)
        case .join(let pending):
            metrics.introspectionCache(provider: provider.name, hit: false)
            return .pending(pending.hop(to: eventLoop))
        case .busy:
            metrics.introspectionCache(provider: provider.name, hit: false)
            var failure = AuthFailure(.introspectionBusy, "\(settings.maxInFlight) introspection calls already in flight")
            failure.provider = provider.name
            return .done(.failure(failure))
        case .call(let promise, let endpoint):
            metrics.introspectionCache(provider: provider.name, hit: false)
            let started = NIODeadline.now()
            let url = endpoint.map { eventLoop.makeSucceededFuture($0) } ?? discover(on: eventLoop)
            url.flatMap { self.client.introspect(token, endpoint: $0, on: eventLoop) }.whenComplete { answer in
                self.metrics.introspectionDuration.recordNanoseconds((NIODeadline.now() - started).nanoseconds)
                let result = self.settle(answer, key: key, now: now)
                promise.succeed(result)
            }
            return .pending(promise.futureResult)
        }
    }

    private func discover(on eventLoop: any EventLoop) -> EventLoopFuture<URL> {
        client.discoverEndpoint(on: eventLoop).map { url in
            self.state.withLockedValue { $0.endpoint = url }
            return url
        }
    }

    /// The answer judged, cached as the rules above say, and the call taken out of flight.
    private func settle(_ answer: Result<(UInt, [UInt8]), any Error>, key: TokenKey, now: Int64) -> Result<VerifiedIdentity, AuthFailure> {
        let outcome: IntrospectionAnswer.Outcome
        switch answer {
        case .success(let (status, body)):
            outcome = IntrospectionAnswer.judge(status: status, body: body, provider: provider, now: now, leeway: leeway)
        case .failure(let error):
            outcome = .unusable("\(error)")
        }
        let result: Result<VerifiedIdentity, AuthFailure>
        var entry: Entry?
        switch outcome {
        case .active(let claims):
            let identity = makeIdentity(claims, key: key, now: now)
            metrics.introspectionCall(provider: provider.name, result: "active")
            entry = .active(identity, until: min(now + settings.cacheTTL.components.seconds, identity.expiry))
            result = .success(identity)
        case .inactive(var failure):
            metrics.introspectionCall(provider: provider.name, result: "inactive")
            failure.provider = provider.name
            entry = .inactive(failure, until: now + settings.negativeCacheTTL.components.seconds)
            result = .failure(failure)
        case .unusable(let why):
            metrics.introspectionCall(provider: provider.name, result: "error")
            failures.occurred("introspection failed", metadata: ["gatehouse.provider": "\(provider.name)", "gatehouse.error": "\(why)"], to: logger)
            var failure = AuthFailure(.introspectionUnavailable, "the issuer did not answer usably: \(LogText.truncated(why, maxBytes: 200))")
            failure.provider = provider.name
            result = .failure(failure)
        }
        state.withLockedValue { state in
            state.inFlight[key] = nil
            if let entry { state.cache.insert(entry, for: key) }
        }
        return result
    }

    private func makeIdentity(_ claims: [String: JSONValue], key: TokenKey, now: Int64) -> VerifiedIdentity {
        let ttl = settings.cacheTTL.components.seconds
        return VerifiedIdentity(
            providerIndex: providerIndex,
            providerName: provider.name,
            claims: claims,
            encodedPayload: Base64URL.encode(Array(JSONValue.object(claims).compactJSON.utf8)),
            keyID: nil,
            expiry: claims["exp"]?.integerValue ?? now + ttl,
            revocationKey: RevocationList.tokenKey(provider: provider.name, claims: claims, tokenDigest: key.bytes),
            keysFetchedAt: nil)
    }

    /// One per `type = "introspection"` provider, by provider index. A secret that cannot be read throws
    /// (`serve` refuses to start, naming the key).
    static func all(
        for providers: [Provider], client: HTTPClient, timeout: Duration, leeway: Int64, metrics: GatehouseMetrics, logger: Logger
    ) throws -> [Introspector] {
        try providers.indices.compactMap { index in
            guard let settings = providers[index].introspection else { return nil }
            let secret: String?
            do {
                secret = try settings.clientSecret?.resolve()
            } catch {
                throw IntrospectionClient.Failure(description: "provider \(providers[index].name) client_secret: \(error)")
            }
            let client = IntrospectionClient(
                client: client, settings: settings, issuer: providers[index].issuers.first, clientSecret: secret, timeout: timeout)
            return Introspector(providerIndex: index, provider: providers[index], client: client, leeway: leeway, metrics: metrics, logger: logger)
        }
    }
}
