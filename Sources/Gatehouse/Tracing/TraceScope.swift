import NIOCore
import NIOPosix

/// The traced request whose decision is being made on this thread, for the services it calls (JWKS, userinfo,
/// introspection, TokenReview, the revocation store, the shared DPoP replay store) to hang the span of their
/// call under. A decision is asked for synchronously on the request's event loop (`ExchangeDriving`), so the
/// request is known for exactly that call without passing it through every service's signature.
enum TraceScope {
    private static let slot = ThreadSpecificVariable<RequestTrace>()

    /// The request whose decision is being made on this thread, if traced: taken into a callback that continues it.
    static var current: RequestTrace? { slot.currentValue }

    /// Runs `body` with `trace` as the current request (nil: none, nothing is recorded).
    static func with<T>(_ trace: RequestTrace?, _ body: () -> T) -> T {
        guard let trace else { return body() }
        let outer = slot.currentValue
        slot.currentValue = trace
        defer { slot.currentValue = outer }
        return body()
    }

    /// A child span of the current request for `future`'s wait: from now until it completes.
    static func span<T>(_ name: String, kind: TraceSpan.Kind = .client, attributes: [(String, TraceSpan.Value)] = [],
                        around future: EventLoopFuture<T>) -> EventLoopFuture<T> {
        guard let trace = slot.currentValue else { return future }
        let start = NIODeadline.now()
        future.whenComplete { result in
            var error: String?
            if case .failure(let failure) = result { error = String(describing: failure) }
            trace.child(name, kind: kind, from: start, to: .now(), attributes: attributes, error: error)
        }
        return future
    }
}
