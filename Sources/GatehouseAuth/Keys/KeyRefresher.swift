import Logging
package import NIOCore

/// Keeps every provider's keys fresh: fetches all providers at start in parallel, retrying with
/// jittered exponential backoff until each has keys, then refreshes each before its set expires.
/// Requests never wait on this; it runs until its task is cancelled or a reload retires its store.
package struct KeyRefresher: Sendable {
    package let keyStore: KeyStore
    package let eventLoopGroup: any EventLoopGroup
    package let minRefresh: Duration

    package init(keyStore: KeyStore, eventLoopGroup: any EventLoopGroup, minRefresh: Duration) {
        self.keyStore = keyStore
        self.eventLoopGroup = eventLoopGroup
        self.minRefresh = minRefresh
    }

    static let firstRetry = Duration.milliseconds(500)
    static let maxRetry = Duration.seconds(60)

    package func run() async {
        await withTaskGroup(of: Void.self) { group in
            for index in keyStore.providers.indices where keyStore.providers[index].keySource != .introspection {
                group.addTask { await self.keepFresh(provider: index) }
            }
        }
    }

    private func keepFresh(provider index: Int) async {
        var retryDelay = Self.firstRetry
        if keyStore.hasKeySet(provider: index), !keyStore.lastFetchFailed(provider: index) {
            // Carried over by a reload: keep its schedule.
            let wait = keyStore.nextRefresh(provider: index) - NIODeadline.now()
            guard (try? await Task.sleep(for: .nanoseconds(max(wait.nanoseconds, 0)))) != nil else { return }
        }
        while !Task.isCancelled, !keyStore.isRetired {
            let eventLoop = eventLoopGroup.next()
            await keyStore.refresh(provider: index, on: eventLoop).waitUnlessCancelled()
            let delay: Duration
            if keyStore.lastFetchFailed(provider: index) {
                keyStore.usePersistedKeys(provider: index)
                delay = Self.jittered(retryDelay)
                retryDelay = min(retryDelay * 2, min(Self.maxRetry, max(minRefresh, Self.firstRetry)))
            } else {
                retryDelay = Self.firstRetry
                let wait = keyStore.nextRefresh(provider: index) - NIODeadline.now()
                delay = .nanoseconds(max(wait.nanoseconds, 0))
            }
            do {
                try await Task.sleep(for: delay)
            } catch {
                return
            }
        }
    }

    /// 75%..125% of `delay`, so replicas that failed together do not retry together.
    static func jittered(_ delay: Duration) -> Duration {
        delay * Double.random(in: 0.75...1.25)
    }
}
