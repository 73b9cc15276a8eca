import Foundation
package import Logging
import NIOConcurrencyHelpers
package import NIOCore
import GatehouseTelemetry

/// Sign-outs and the store behind them.
///
/// A sign-out takes effect in this process at once (the `RevocationList` the gatekeeper reads);
/// the store write follows, and the sign-out is answered when it has succeeded or failed. A write
/// that failed is kept and written again after the next (re)connection: nothing is lost.
/// `run()` keeps the store connected, applies what other replicas revoke, and deletes expired entries.
package final class RevocationService: Sendable {
    package let list = RevocationList()
    /// The back-channel logout tokens taken here (`claimLogout`).
    package let logoutReplays = LogoutReplayMemory()
    package let store: any RevocationStore
    private let logger: Logger
    private let state = NIOLockedValueBox(StoreState())
    private let writes: AsyncStream<PendingWrite>
    private let writesInput: AsyncStream<PendingWrite>.Continuation
    /// DPoP proofs waiting to be recorded in the shared store; `proofSignal` wakes the writer, which takes them all.
    private let pendingProofs = NIOLockedValueBox<[PendingProof]>([])
    private let proofSignals: AsyncStream<Void>
    private let proofSignal: AsyncStream<Void>.Continuation
    /// How long a sign-out waits on the store before it is answered 503.
    static let writeTimeout = Duration.seconds(2)
    static let cleanupInterval = Duration.seconds(60)
    static let pingInterval = Duration.seconds(10)

    package struct StoreState: Sendable {
        package var connected = false
        /// The store's contents have been read at least once: this replica knows every sign-out made before it started.
        package var loadedOnce = false
        package var lastError: String?
        /// Revocations applied here that the store has not taken yet.
        package var unsaved: [Revocation] = []
    }

    private struct PendingWrite: Sendable {
        var revocation: Revocation
        var promise: EventLoopPromise<Void>
    }

    private struct PendingProof: Sendable {
        var claim: ProofClaim
        var promise: EventLoopPromise<Bool>
    }

    /// Whether DPoP proofs are recorded in the store (it is shared: SQLite or PostgreSQL).
    package var sharesProofs: Bool { !(store is MemoryRevocationStore) }

    package init(store: any RevocationStore, logger: Logger) {
        self.store = store
        self.logger = logger
        (writes, writesInput) = AsyncStream.makeStream(of: PendingWrite.self)
        (proofSignals, proofSignal) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Records a DPoP proof in the shared store: the future is true when no replica had recorded it.
    /// Proofs arriving while a write is under way go together in the next one.
    package func claimProof(_ key: DPoPReplayCache.Key, expiresAt: Int64, on eventLoop: any EventLoop) -> EventLoopFuture<Bool> {
        claimProof(key: key.hex, expiresAt: expiresAt, on: eventLoop)
    }

    /// Records a back-channel logout token's `jti` here and, with a shared store, there: the future is false when this
    /// replica or another had taken it (a replay). A store that cannot answer counts as not having it: taking a token
    /// twice revokes nothing new (`LogoutToken.revocation(now:)`), refusing one the provider sent once would lose a logout.
    package func claimLogout(_ token: LogoutToken, on eventLoop: any EventLoop) -> EventLoopFuture<Bool> {
        let now = Self.now()
        let key = token.replayKey
        if logoutReplays.contains(key, now: now) { return eventLoop.makeSucceededFuture(false) }
        logoutReplays.insert(key, until: token.replayableUntil, now: now)
        guard sharesProofs else { return eventLoop.makeSucceededFuture(true) }
        return claimProof(key: key, expiresAt: token.replayableUntil, on: eventLoop).recover { _ in true }
    }

    private func claimProof(key: String, expiresAt: Int64, on eventLoop: any EventLoop) -> EventLoopFuture<Bool> {
        let promise = eventLoop.makePromise(of: Bool.self)
        pendingProofs.withLockedValue { $0.append(PendingProof(claim: ProofClaim(key: key, expiresAt: expiresAt), promise: promise)) }
        if case .terminated = proofSignal.yield() {
            for pending in pendingProofs.withLockedValue({ pending in defer { pending = [] }; return pending }) {
                pending.promise.fail(RevocationStoreError(description: "gatehouse is stopping"))
            }
        }
        return promise.futureResult
    }

    private func writeProofClaims() async {
        for await _ in proofSignals {
            let batch = pendingProofs.withLockedValue { pending in defer { pending = [] }; return pending }
            guard !batch.isEmpty else { continue }
            do {
                let fresh = try await boundedValue { try await self.store.claimProofs(batch.map(\.claim)) }
                for pending in batch { pending.promise.succeed(fresh.contains(pending.claim.key)) }
            } catch {
                for pending in batch { pending.promise.fail(error) }
            }
        }
    }

    package var status: StoreState { state.withLockedValue { $0 } }

    /// Applies the revocation here now; the future succeeds once the store holds it, fails if it could not.
    package func revoke(_ revocation: Revocation, on eventLoop: any EventLoop) -> EventLoopFuture<Void> {
        list.apply(revocation, now: Self.now())
        if store is MemoryRevocationStore { return eventLoop.makeSucceededVoidFuture() }  // nothing to write
        let promise = eventLoop.makePromise(of: Void.self)
        if case .terminated = writesInput.yield(PendingWrite(revocation: revocation, promise: promise)) {
            promise.fail(RevocationStoreError(description: "gatehouse is stopping"))
        }
        return promise.futureResult
    }

    /// Keeps the store followed (reconnecting with backoff), writes sign-outs, cleans up; until cancelled.
    package func run() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.followStore() }
            group.addTask { await self.writeSignOuts() }
            group.addTask { await self.cleanUp() }
            group.addTask { await self.writeProofClaims() }
            await group.next()
            group.cancelAll()
        }
        writesInput.finish()
        proofSignal.finish()
        for pending in pendingProofs.withLockedValue({ pending in defer { pending = [] }; return pending }) {
            pending.promise.fail(RevocationStoreError(description: "gatehouse is stopping"))
        }
        for await pending in writes { pending.promise.fail(RevocationStoreError(description: "gatehouse is stopping")) }
    }

    private func followStore() async {
        var backoff = Duration.milliseconds(250)
        while !Task.isCancelled {
            do {
                try await store.follow { [self] event in
                    switch event {
                    case .loaded(let revocations):
                        list.apply(revocations, now: Self.now(), fromStore: true)
                        let wasConnected = state.withLockedValue { state in
                            defer { state.connected = true; state.loadedOnce = true; state.lastError = nil }
                            return state.connected
                        }
                        if !wasConnected {
                            logger.notice("revocation store connected", metadata: [
                                "gatehouse.store": "\(store.location)", "gatehouse.revocations": "\(revocations.count)",
                            ])
                        }
                    case .received(let revocation):
                        list.apply(revocation, now: Self.now(), fromStore: true)
                    }
                }
                backoff = .milliseconds(250)
            } catch is CancellationError {
                break
            } catch {
                if Task.isCancelled { break }
                let wasConnected = state.withLockedValue { state in
                    defer { state.connected = false; state.lastError = "\(error)" }
                    return state.connected
                }
                if wasConnected { backoff = .milliseconds(250) }  // a new outage starts with quick retries
                if wasConnected || backoff == .milliseconds(250) {
                    logger.error("revocation store unavailable; judging on what is known, reconnecting", metadata: [
                        "gatehouse.store": "\(store.location)", "gatehouse.error": "\(error)",
                    ])
                }
            }
            try? await Task.sleep(for: backoff)
            backoff = min(backoff * 2, .seconds(5))
        }
    }

    /// Sign-outs in the order they were made; each answered when the store has it or has failed.
    private func writeSignOuts() async {
        for await pending in writes {
            do {
                try await save(pending.revocation)
                pending.promise.succeed()
            } catch {
                state.withLockedValue { if !$0.unsaved.contains(pending.revocation) { $0.unsaved.append(pending.revocation) } }
                logger.error("revocation store write failed; applied on this replica only until it is retried", metadata: [
                    "gatehouse.store": "\(store.location)", "gatehouse.error": "\(error)",
                ])
                pending.promise.fail(error)
            }
        }
    }

    /// Once a second: writes again what failed while the store was away. Every 10 s: checks the
    /// connection answers. Once a minute: deletes expired entries.
    private func cleanUp() async {
        var sinceCleanup = Duration.zero
        var sincePing = Duration.zero
        while (try? await Task.sleep(for: .seconds(1))) != nil {
            let unsaved = state.withLockedValue { state -> [Revocation] in
                guard state.connected else { return [] }
                defer { state.unsaved = [] }
                return state.unsaved
            }
            for (index, revocation) in unsaved.enumerated() {
                do {
                    try await save(revocation)
                } catch {
                    state.withLockedValue { $0.unsaved.append(contentsOf: unsaved[index...]) }
                    break
                }
            }
            sincePing += .seconds(1)
            if sincePing >= Self.pingInterval, state.withLockedValue({ $0.connected }) {
                sincePing = .zero
                try? await bounded { try await self.store.ping() }
            }
            sinceCleanup += .seconds(1)
            if sinceCleanup >= Self.cleanupInterval {
                sinceCleanup = .zero
                let now = Self.now()
                list.removeExpired(now: now)
                if state.withLockedValue({ $0.connected }) {
                    try? await bounded { try await self.store.deleteTokenEntries(expiringBefore: Revocation.droppableBefore(now: now)) }
                    try? await bounded { try await self.store.deleteProofEntries(expiringBefore: now) }
                }
            }
        }
    }

    /// One store write, bounded by `writeTimeout` (a hung connection must not hold a sign-out).
    private func save(_ revocation: Revocation) async throws {
        try await bounded { try await self.store.save(revocation) }
    }

    /// Runs a store operation for at most `writeTimeout`. Database drivers do not cancel a query
    /// in flight, so on expiry the connection is closed: the operation fails at once, and the
    /// follower reconnects (and re-reads what it may have missed).
    private func bounded(_ operation: @escaping @Sendable () async throws -> Void) async throws {
        try await boundedValue(operation)
    }

    private func boundedValue<Value: Sendable>(_ operation: @escaping @Sendable () async throws -> Value) async throws -> Value {
        try await withThrowingTaskGroup(of: Value.self) { group in
            group.addTask { try await operation() }
            group.addTask {
                try await Task.sleep(for: Self.writeTimeout)
                self.store.abandonConnection()
                throw RevocationStoreError(description: "the revocation store did not answer within \(Self.writeTimeout)")
            }
            defer { group.cancelAll() }
            guard let value = try await group.next() else { throw CancellationError() }
            return value
        }
    }

    package static func now() -> Int64 { Int64(Date().timeIntervalSince1970) }
}
