import Atomics
import Foundation
public import Logging
public import NIOCore
import NIOConcurrencyHelpers
public import GatehouseConfig
public import GatehouseTokens
public import GatehouseVocabulary

/// Every provider's current keys, read on each request without waiting, and the one place that
/// fetches them: at most one fetch per provider in flight (single-flight), unknown-`kid` refetches
/// at most once per cooldown, the last good set kept on failure until `max_stale`, and the key IDs
/// later fetches dropped remembered (`KeySnapshot.retiredKeyIDs`).
///
/// The request path reads an immutable snapshot through one atomic load (no lock, no actor hop);
/// the fetch bookkeeping sits behind a per-provider lock that only fetches take.
public final class KeyStore: Sendable {
    /// What the request path reads: replaced whole, never mutated.
    final class SnapshotBox: AtomicReference, Sendable {
        let snapshot: KeySnapshot?
        /// The snapshot's `fetchedAt`, read without a copy of the snapshot (a reference to its key set each time).
        let fetchedAt: NIODeadline?
        init(_ snapshot: KeySnapshot?) {
            self.snapshot = snapshot
            self.fetchedAt = snapshot?.fetchedAt
        }
    }

    struct ProviderState {
        var lastError: String?
        /// The fetch under way; it completes with whether it succeeded.
        var inFlight: EventLoopFuture<Bool>?
        /// When the last refetch an unknown `kid` caused began: the cooldown counts from it (and from
        /// nothing else: the first fetch and scheduled refreshes do not spend it).
        var lastUnscheduledFetch: NIODeadline?
        /// When a fetch failure was last written to the operational log (they are rate limited).
        var lastFailureLogged: NIODeadline?
        /// When the scheduled refresher should fetch next.
        var nextRefresh: NIODeadline = .now()
        /// `backchannel_logout = true` and discovery does not announce it: said once.
        var toldBackchannelLogoutUnannounced = false
    }

    /// The same fetch failure is logged at most this often per provider (the metrics count every one).
    static let failureLogInterval = TimeAmount.seconds(60)

    public let providers: [Provider]
    private let states: [NIOLockedValueBox<ProviderState>]
    private let snapshots: [ManagedAtomic<SnapshotBox>]
    private let persistence: PersistedKeySets?
    private let fetcher: JWKSFetcher
    private let settings: JWKSSettings
    private let logger: Logger
    private let onFetch: @Sendable (_ provider: String, _ result: Result<Int, JWKSFetcher.FetchError>) -> Void

    /// Set when a reload replaced this store: its refresher stops.
    private let retiredFlag = ManagedAtomic(false)

    /// - Parameter carriedOver: for a reload, new provider index -> (the old store, its index there):
    ///   providers whose settings did not change keep their keys, schedule and cooldowns.
    public init(
        providers: [Provider],
        fetcher: JWKSFetcher,
        settings: JWKSSettings,
        logger: Logger,
        carriedOver: [Int: (store: KeyStore, index: Int)] = [:],
        onFetch: @escaping @Sendable (_ provider: String, _ result: Result<Int, JWKSFetcher.FetchError>) -> Void = { _, _ in }
    ) {
        self.providers = providers
        self.states = providers.map { _ in NIOLockedValueBox(ProviderState()) }
        self.snapshots = providers.map { _ in ManagedAtomic(SnapshotBox(nil)) }
        self.persistence = settings.cacheDirectory.map(PersistedKeySets.init(directory:))
        self.fetcher = fetcher
        self.settings = settings
        self.logger = logger
        self.onFetch = onFetch
        adopt(carriedOver)
    }

    /// Takes over the keys, schedule and cooldowns of unchanged providers from the store this one
    /// replaces; called again at the swap, so a fetch the old store finished meanwhile is not lost.
    package func adopt(_ carriedOver: [Int: (store: KeyStore, index: Int)]) {
        for (index, (store, old)) in carriedOver {
            var state = store.states[old].withLockedValue { $0 }
            state.inFlight = nil
            states[index].withLockedValue { $0 = state }
            snapshots[index].store(store.snapshots[old].load(ordering: .acquiring), ordering: .releasing)
        }
    }

    package var minRefresh: Duration { settings.minRefresh }
    var isRetired: Bool { retiredFlag.load(ordering: .relaxed) }
    package func retire() { retiredFlag.store(true, ordering: .relaxed) }

    /// Whether the provider has a key set (of any age): a refresher started for a carried-over
    /// provider waits for its scheduled refresh instead of fetching at once.
    func hasKeySet(provider index: Int) -> Bool {
        snapshots[index].load(ordering: .acquiring).snapshot != nil
    }

    /// The provider's keys if it has a set younger than `max_stale`; nil means answer 503.
    public func usableKeys(provider index: Int, now: NIODeadline = .now()) -> KeySnapshot? {
        guard let snapshot = snapshots[index].load(ordering: .acquiring).snapshot else { return nil }
        return isFresh(snapshot.fetchedAt, now: now) ? snapshot : nil
    }

    /// When the provider's usable key set was fetched (`usableKeys(provider:now:)`'s `fetchedAt`), without copying the set:
    /// what a cached identity is checked against on every request.
    func usableKeysFetchedAt(provider index: Int, now: NIODeadline = .now()) -> NIODeadline? {
        guard let fetchedAt = snapshots[index].load(ordering: .acquiring).fetchedAt else { return nil }
        return isFresh(fetchedAt, now: now) ? fetchedAt : nil
    }

    /// A key set fetched then is still usable: younger than `max_stale`.
    private func isFresh(_ fetchedAt: NIODeadline, now: NIODeadline) -> Bool {
        now - fetchedAt <= TimeAmount(settings.maxStale)
    }

    /// What a token naming a key the set lacks may wait for.
    public enum UnknownKeyRefetch {
        /// A fetch that began now or was already in flight; it completes with whether it succeeded.
        case fetching(EventLoopFuture<Bool>)
        /// None is in flight and none may start for this long (`unknown_kid_cooldown`).
        case coolingDown(TimeAmount)
    }

    /// Joins the fetch in flight, or starts a refetch because a token named a key the set does not have:
    /// at most one per provider per `unknown_kid_cooldown`.
    public func refetchForUnknownKey(provider index: Int, on eventLoop: any EventLoop) -> UnknownKeyRefetch {
        let now = NIODeadline.now()
        var wait = TimeAmount.zero
        let fetch = fetch(provider: index, on: eventLoop) { state in
            wait = cooldownRemaining(since: state.lastUnscheduledFetch, now: now)
            guard wait == .zero else { return false }
            state.lastUnscheduledFetch = now
            return true
        }
        guard let fetch else { return .coolingDown(wait) }
        return .fetching(fetch.hop(to: eventLoop))
    }

    /// How long until a token naming an unknown key may cause a refetch again (zero: now).
    public func refetchAllowedIn(provider index: Int, now: NIODeadline = .now()) -> TimeAmount {
        cooldownRemaining(since: states[index].withLockedValue { $0.lastUnscheduledFetch }, now: now)
    }

    private func cooldownRemaining(since last: NIODeadline?, now: NIODeadline) -> TimeAmount {
        let cooldown = TimeAmount(settings.unknownKidCooldown)
        guard let last, now - last < cooldown else { return .zero }
        return last + cooldown - now
    }

    /// Starts (or joins) a fetch for the scheduled refresher or start-up.
    package func refresh(provider index: Int, on eventLoop: any EventLoop) -> EventLoopFuture<Void> {
        guard let fetch = fetch(provider: index, on: eventLoop, mayStart: { _ in true }) else { return eventLoop.makeSucceededVoidFuture() }
        return fetch.map { _ in }
    }

    /// When the refresher should fetch this provider next.
    func nextRefresh(provider index: Int) -> NIODeadline {
        states[index].withLockedValue { $0.nextRefresh }
    }

    /// Whether the most recent fetch for this provider failed (the refresher then retries sooner).
    func lastFetchFailed(provider index: Int) -> Bool {
        states[index].withLockedValue { $0.lastError != nil }
    }

    /// Start-up with the provider unreachable: use the set persisted by an earlier run, if it is
    /// younger than `max_stale` and nothing fresher is loaded. Returns whether it was used.
    @discardableResult
    func usePersistedKeys(provider index: Int) -> Bool {
        let provider = providers[index]
        let current = snapshots[index].load(ordering: .acquiring)
        guard current.snapshot == nil, let persistence, let persisted = persistence.load(provider: provider.name) else { return false }
        let age = Date().timeIntervalSince(persisted.fetchedAt)
        guard age >= 0, age <= Double(settings.maxStale.components.seconds),
            let keySet = try? JWKSet.parse(persisted.body, allowedAlgorithms: provider.algorithms)
        else { return false }
        let fetchedAt = NIODeadline.now() - .nanoseconds(Int64(age * 1e9))
        // No `listedAsOf`: when that fetch began is not on disk, so no token's `iat` is judged against this set.
        let loaded = SnapshotBox(KeySnapshot(keySet: keySet, fetchedAt: fetchedAt, fetchedAtDate: persisted.fetchedAt))
        // A fetch that succeeded meanwhile wins.
        guard snapshots[index].compareExchange(expected: current, desired: loaded, ordering: .acquiringAndReleasing).exchanged else {
            return false
        }
        logger.warning("provider unreachable at start: using persisted JWKS", metadata: [
            "gatehouse.provider": "\(provider.name)", "gatehouse.age_seconds": "\(Int(age))", "gatehouse.keys": "\(keySet.keys.count)",
        ])
        return true
    }

    private func persist(_ body: [UInt8], provider index: Int, at date: Date) {
        guard let persistence else { return }
        do {
            try persistence.save(provider: providers[index].name, body: body, fetchedAt: date)
        } catch {
            logger.warning("could not persist JWKS", metadata: ["gatehouse.provider": "\(providers[index].name)", "gatehouse.error": "\(error)"])
        }
    }

    public func status() -> [ProviderKeyStatus] {
        let now = NIODeadline.now()
        // Introspection providers have no keys: they are not waited for, reported or aged.
        return providers.indices.filter { providers[$0].keySource != .introspection }.map { index in
            let state = states[index].withLockedValue { $0 }
            let snapshot = snapshots[index].load(ordering: .acquiring).snapshot
            return ProviderKeyStatus(
                provider: providers[index].name,
                keyCount: snapshot?.keySet.keys.count ?? 0,
                usable: usableKeys(provider: index, now: now) != nil,
                lastFetch: snapshot?.fetchedAtDate,
                lastError: state.lastError
            )
        }
    }

    /// Single-flight: joins the fetch in flight, or starts one if `mayStart` agrees (decided under the lock).
    /// The future completes with whether the fetch succeeded.
    private func fetch(
        provider index: Int,
        on eventLoop: any EventLoop,
        mayStart: (inout ProviderState) -> Bool
    ) -> EventLoopFuture<Bool>? {
        let promise = eventLoop.makePromise(of: Bool.self)
        enum Action { case join(EventLoopFuture<Bool>), start, refuse }
        let action: Action = states[index].withLockedValue { state in
            if let inFlight = state.inFlight { return .join(inFlight) }
            guard mayStart(&state) else { return .refuse }
            state.inFlight = promise.futureResult
            return .start
        }
        switch action {
        case .join(let future):
            promise.succeed(false)
            return future
        case .refuse:
            promise.succeed(false)
            return nil
        case .start:
            let provider = providers[index]
            let startedAt = Date()
            fetcher.fetch(provider, on: eventLoop).whenComplete { result in
                self.record(result, provider: index, startedAt: startedAt)
                promise.succeed((try? result.get()) != nil)
            }
            return promise.futureResult
        }
    }

    private func record(_ result: Result<JWKSFetcher.Fetched, any Error>, provider index: Int, startedAt: Date) {
        let name = providers[index].name
        switch result {
        case .success(let fetched):
            let interval = CacheLifetime.refreshInterval(
                freshFor: fetched.freshFor, minimum: settings.minRefresh, maximum: settings.maxRefresh)
            let now = NIODeadline.now()
            // Fetches of one provider never overlap (single-flight), so the set read here is the one replaced.
            let previous = snapshots[index].load(ordering: .acquiring).snapshot
            let snapshot = KeySnapshot(
                keySet: fetched.keySet, fetchedAt: now, fetchedAtDate: Date(),
                listedAsOf: fetched.age.map { startedAt - TimeInterval($0.components.seconds) },
                retiredKeyIDs: previous?.retiredKeyIDs(after: fetched.keySet) ?? [])
            snapshots[index].store(SnapshotBox(snapshot), ordering: .releasing)
            persist(fetched.body, provider: index, at: snapshot.fetchedAtDate)
            states[index].withLockedValue { state in
                state.lastError = nil
                state.inFlight = nil
                state.nextRefresh = now + TimeAmount(interval)
            }
            for skipped in fetched.keySet.skipped {
                logger.warning("skipped unusable JWKS key", metadata: [
                    "gatehouse.provider": "\(name)", "gatehouse.kid": "\(skipped.keyID ?? "-")", "gatehouse.reason": "\(skipped.reason)",
                ])
            }
            if providers[index].backchannelLogout != nil, fetched.announcesBackchannelLogout == false,
                states[index].withLockedValue({ state in defer { state.toldBackchannelLogoutUnannounced = true }; return !state.toldBackchannelLogoutUnannounced })
            {
                logger.warning("the provider's discovery document does not announce backchannel_logout_supported: it may never send logout tokens", metadata: [
                    "gatehouse.provider": "\(name)",
                ])
            }
            logger.info("fetched JWKS", metadata: [
                "gatehouse.provider": "\(name)", "gatehouse.keys": "\(fetched.keySet.keys.count)", "gatehouse.next_refresh": "\(interval)",
            ])
            onFetch(name, .success(fetched.keySet.keys.count))
        case .failure(let error):
            let message = (error as? JWKSFetcher.FetchError)?.description ?? "\(error)"
            let now = NIODeadline.now()
            let shouldLog = states[index].withLockedValue { state -> Bool in
                defer { state.lastError = message; state.inFlight = nil }
                guard state.lastError != message || state.lastFailureLogged.map({ now - $0 >= Self.failureLogInterval }) ?? true else {
                    return false
                }
                state.lastFailureLogged = now
                return true
            }
            if shouldLog {
                logger.warning("JWKS fetch failed; keeping the last good keys", metadata: [
                    "gatehouse.provider": "\(name)", "gatehouse.error": "\(message)",
                ])
            }
            onFetch(name, .failure(JWKSFetcher.FetchError(message)))
        }
    }
}
