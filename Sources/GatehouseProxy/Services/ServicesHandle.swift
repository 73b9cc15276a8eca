import Atomics
import GatehouseAuth

/// The `ProxyServices` new requests start with. A reload swaps in new ones atomically; each
/// request reads them once, at its head, and keeps them to its end.
package final class ServicesHandle: Sendable {
    final class Box: AtomicReference, Sendable {
        let services: ProxyServices
        package init(_ services: ProxyServices) { self.services = services }
    }

    private let current: ManagedAtomic<Box>

    package init(_ services: ProxyServices) {
        current = ManagedAtomic(Box(services))
    }

    package var services: ProxyServices { current.load(ordering: .acquiring).services }

    package func replace(_ services: ProxyServices) {
        current.store(Box(services), ordering: .releasing)
    }
}
