import NIOConcurrencyHelpers
package import NIOCore
import Prometheus
package import GatehouseTokens
import GatehouseTelemetry
package import GatehouseVocabulary

/// What the issuer said about tokens it alone can judge (RFC 7662 introspection, Kubernetes TokenReview),
/// kept so that the cache can never be the hole:
/// - entries are keyed by the token's SHA-256, never the token, and hold the issuer's verdict on the token
///   only: route requirements and revocation are judged on every request (`Gatekeeper`), never cached;
/// - an active verdict lives until the `until` its asker gives (at most `cache_ttl` and the token's `exp`),
///   an inactive one `negative_cache_ttl`; an issuer that could not answer is not cached at all;
/// - concurrent requests with one token make one call (single-flight);
/// - at most `maxInFlight` calls at once, and at most `maxCallsPerSecond` started per second (a token bucket
///   of one second's worth): the rest are answered 503 `introspection_busy` at once, so a flood of random
///   tokens never becomes a flood at the issuer, nor eats the CPU the valid tokens' requests need;
/// - bounded memory (`BoundedTokenMap`: at most `capacity` answers).
package final class IssuerVerdicts: Sendable {
    package enum Answer: Sendable {
        case active(VerifiedIdentity, until: Int64)
        case inactive(AuthFailure, until: Int64)
        /// The issuer could not be asked or did not answer usably: not cached.
        case unusable(AuthFailure)
    }

    private let providerName: String
    private let maxInFlight: Int
    private let maxCallsPerSecond: Int
    private let metrics: GatehouseMetrics
    private let counters: GatehouseMetrics.IntrospectionCounters
    private let state: NIOLockedValueBox<State>

    package struct State: Sendable {
        package var cache: BoundedTokenMap<Answer>
        var inFlight: [TokenKey: EventLoopFuture<Result<VerifiedIdentity, AuthFailure>>] = [:]
        /// Calls that may still start: refilled at `maxCallsPerSecond`, up to one second's worth.
        package var budget: Double
        var refilled = NIODeadline.now()

        package init(cache: BoundedTokenMap<Answer>, budget: Double, refilled: NIODeadline = .now()) {
            self.cache = cache
            self.budget = budget
            self.refilled = refilled
        }
    }

    init(providerName: String, capacity: Int, maxInFlight: Int, maxCallsPerSecond: Int, metrics: GatehouseMetrics) {
        self.providerName = providerName
        self.maxInFlight = maxInFlight
        self.maxCallsPerSecond = maxCallsPerSecond
        self.metrics = metrics
        self.counters = metrics.introspectionCounters(provider: providerName)
        state = NIOLockedValueBox(State(cache: BoundedTokenMap(capacity: capacity), budget: Double(maxCallsPerSecond)))
    }

    /// Answers from the cache, joins the call in flight for this token, refuses beyond the bounds, or asks
    /// (`ask` gets the token's SHA-256, the key it is cached and revoked by).
    package func judge(
        _ token: Substring, now: Int64, on eventLoop: any EventLoop, ask: @escaping @Sendable (TokenKey) -> EventLoopFuture<Answer>
    ) -> TokenVerifier.Verdict {
        let key = TokenKey.sha256(of: token)
        enum Step {
            case cached(Result<VerifiedIdentity, AuthFailure>)
            case join(EventLoopFuture<Result<VerifiedIdentity, AuthFailure>>)
            case busy
            case call(EventLoopPromise<Result<VerifiedIdentity, AuthFailure>>)
        }
        let step: Step = state.withLockedValue { state in
            switch state.cache.value(for: key) {
            case .active(let identity, let until) where until > now: return .cached(.success(identity))
            case .inactive(let failure, let until) where until > now: return .cached(.failure(failure))
            default: break
            }
            if let pending = state.inFlight[key] { return .join(pending) }
            guard state.inFlight.count < maxInFlight, state.takeFromBudget(perSecond: maxCallsPerSecond) else { return .busy }
            let promise = eventLoop.makePromise(of: Result<VerifiedIdentity, AuthFailure>.self)
            state.inFlight[key] = promise.futureResult
            return .call(promise)
        }
        switch step {
        case .cached(let result):
            counters.hits.increment()
            return .now(result)
        case .join(let pending):
            counters.misses.increment()
            return .later(TraceScope.span("gatehouse.introspection", attributes: [("gatehouse.provider", .string(providerName)),
                                            ("gatehouse.joined", .bool(true))], around: pending.hop(to: eventLoop)))
        case .busy:
            counters.misses.increment()
            var failure = AuthFailure(.introspectionBusy, "\(maxInFlight) calls to the issuer in flight, or \(maxCallsPerSecond) started this second")
            failure.provider = providerName
            return .now(.failure(failure))
        case .call(let promise):
            counters.misses.increment()
            let started = NIODeadline.now()
            ask(key).whenComplete { outcome in
                self.metrics.introspectionDuration.recordNanoseconds((NIODeadline.now() - started).nanoseconds)
                let answer: Answer
                switch outcome {
                case .success(let given): answer = given
                case .failure(let error): answer = .unusable(AuthFailure(.introspectionUnavailable, "\(error)"))
                }
                promise.succeed(self.settle(answer, key: key))
            }
            return .later(TraceScope.span("gatehouse.introspection", attributes: [("gatehouse.provider", .string(providerName))],
                                            around: promise.futureResult))
        }
    }

    /// The verdict cached as the rules above say, counted, and the call taken out of flight.
    private func settle(_ answer: Answer, key: TokenKey) -> Result<VerifiedIdentity, AuthFailure> {
        let result: Result<VerifiedIdentity, AuthFailure>
        var kept: Answer?
        switch answer {
        case .active(let identity, _):
            counters.active.increment()
            kept = answer
            var fresh = identity  // for the requests that waited on this call; the cache keeps it unmarked
            fresh.verifiedNow = true
            result = .success(fresh)
        case .inactive(var failure, let until):
            counters.inactive.increment()
            failure.provider = providerName
            kept = .inactive(failure, until: until)
            result = .failure(failure)
        case .unusable(var failure):
            counters.errors.increment()
            failure.provider = providerName
            result = .failure(failure)
        }
        state.withLockedValue { state in
            state.inFlight[key] = nil
            if let kept { state.cache.insert(kept, for: key) }
        }
        return result
    }
}

extension IssuerVerdicts.State {
    /// One call from the budget, refilled for the time since the last refill.
    mutating func takeFromBudget(perSecond rate: Int, now: NIODeadline = .now()) -> Bool {
        CallBudget.take(budget: &budget, refilled: &refilled, perSecond: rate, now: now)
    }
}
