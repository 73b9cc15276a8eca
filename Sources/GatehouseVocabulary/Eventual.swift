public import NIOCore

/// A value now, or one still to come on an event loop: the decision path's one way to say "later" (a key refetch,
/// introspection, a TokenReview, userinfo, a shared replay store, and the Check's answer that waits on them). Most
/// requests are decided at once, so `now` costs no future, no promise and no allocation.
public enum Eventual<Value: Sendable> {
    case now(Value)
    case later(EventLoopFuture<Value>)

    /// The value transformed when it is there. The closure is made before the value is looked at, so a capturing one
    /// may cost an allocation even for a value there now: on a per-request path, switch instead.
    @inlinable
    public func map<NewValue: Sendable>(_ transform: @escaping @Sendable (Value) -> NewValue) -> Eventual<NewValue> {
        switch self {
        case .now(let value): .now(transform(value))
        case .later(let future): .later(future.map(transform))
        }
    }

    /// A further step that may itself have to wait, once the value is there; a wait's next step completes on
    /// `eventLoop`.
    @inlinable
    public func flatMap<NewValue: Sendable>(
        on eventLoop: any EventLoop, _ next: @escaping @Sendable (Value) -> Eventual<NewValue>
    ) -> Eventual<NewValue> {
        switch self {
        case .now(let value): next(value)
        case .later(let future): .later(future.flatMap { next($0).future(on: eventLoop) })
        }
    }

    /// The value as a future: a succeeded one when it is there now.
    @inlinable
    public func future(on eventLoop: any EventLoop) -> EventLoopFuture<Value> {
        switch self {
        case .now(let value): eventLoop.makeSucceededFuture(value)
        case .later(let future): future
        }
    }

    /// Hands the value to `body`: at once when it is there, else on the future's event loop (the caller's own) once
    /// it comes. A failed future calls nothing: for values whose futures do not fail (the Check's answers).
    @inlinable
    public func whenReady(_ body: @escaping (Value) -> Void) {
        switch self {
        case .now(let value): body(value)
        case .later(let future): future.assumeIsolated().whenSuccess(body)
        }
    }
}
