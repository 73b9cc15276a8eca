#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#else
import Darwin
#endif
package import NIOCore

/// The traced request whose decision is being made on this thread, for the services it calls (JWKS, userinfo,
/// introspection, TokenReview, the revocation store, the shared DPoP replay store) to hang the span of their
/// call under. A decision is asked for synchronously on the request's event loop (`ExchangeDriving`), so the
/// request is known for exactly that call without passing it through every service's signature.
///
/// A bare thread-specific pointer, unretained: `with` holds the trace for as long as it is set, and setting it
/// allocates nothing (NIO's `ThreadSpecificVariable` boxes every value it is set to).
public enum TraceScope {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        // safe: made once per process at the first traced decision, from nothing a client sends; only a process out
        // of thread-specific keys (PTHREAD_KEYS_MAX) fails here.
        precondition(pthread_key_create(&key, nil) == 0, "no thread-specific key left for TraceScope")
        return key
    }()

    /// The request whose decision is being made on this thread, if traced: taken into a callback that continues it.
    package static var current: RequestTrace? {
        pthread_getspecific(key).map { Unmanaged<RequestTrace>.fromOpaque($0).takeUnretainedValue() }
    }

    /// Runs `body` with `trace` as the current request (nil: none, nothing is recorded). Inlined where it is called:
    /// every decision passes through it, and with tracing off it is the call of `body` alone.
    @inlinable public static func with<T>(_ trace: RequestTrace?, _ body: () -> T) -> T {
        guard let trace else { return body() }
        return scoped(trace, body)
    }

    @usableFromInline static func scoped<T>(_ trace: RequestTrace, _ body: () -> T) -> T {
        let outer = pthread_getspecific(key)
        pthread_setspecific(key, Unmanaged.passUnretained(trace).toOpaque())
        defer { pthread_setspecific(key, outer) }
        return withExtendedLifetime(trace) { body() }
    }

    /// A child span of the current request for `future`'s wait: from now until it completes.
    package static func span<T>(_ name: String, kind: TraceSpan.Kind = .client, attributes: [(String, TraceSpan.Value)] = [],
                        around future: EventLoopFuture<T>) -> EventLoopFuture<T> {
        guard let trace = current else { return future }
        let start = NIODeadline.now()
        future.whenComplete { result in
            var error: String?
            if case .failure(let failure) = result { error = String(describing: failure) }
            trace.child(name, kind: kind, from: start, to: .now(), attributes: attributes, error: error)
        }
        return future
    }
}
