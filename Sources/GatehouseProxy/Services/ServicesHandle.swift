import Atomics
package import NIOCore
import GatehouseAuth
import GatehouseExchange

/// The `ProxyServices` new requests start with. A reload swaps in new ones atomically; each
/// request reads them once, at its head, and keeps them to its end.
package final class ServicesHandle: Sendable {
    final class Box: AtomicReference, Sendable {
        let services: ProxyServices
        /// `services.exchange.idleTimeout`, read once: a connection reads it between every two requests.
        let idleTimeout: TimeAmount
        package init(_ services: ProxyServices) {
            self.services = services
            self.idleTimeout = services.exchange.idleTimeout
        }
    }

    private let current: ManagedAtomic<Box>

    package init(_ services: ProxyServices) {
        current = ManagedAtomic(Box(services))
    }

    package var services: ProxyServices { current.load(ordering: .acquiring).services }

    /// The current services' `[listen] idle_timeout` (`ExchangeSettings.idleTimeout`).
    package var idleTimeout: TimeAmount { current.load(ordering: .acquiring).idleTimeout }

    package func replace(_ services: ProxyServices) {
        current.store(Box(services), ordering: .releasing)
    }
}
