public import NIOHTTP2

/// NIO's per-stream user events, told apart by their type's identity. A failed `as?` from `Any` is a runtime cast
/// that searches (the failed casts of the server and upstream handlers showed in profiles of HTTP/2 calls);
/// comparing the event's type with each kind is a pointer comparison, and only the match is cast.
public enum HTTP2StreamEvent {
    case windowUpdated(NIOHTTP2WindowUpdatedEvent)
    case created(NIOHTTP2StreamCreatedEvent)
    case closed(StreamClosedEvent)
    /// Any other event: passed on.
    case other

    @inlinable public init(_ event: Any) {
        let kind = ObjectIdentifier(type(of: event))
        if kind == ObjectIdentifier(NIOHTTP2WindowUpdatedEvent.self), let window = event as? NIOHTTP2WindowUpdatedEvent {
            self = .windowUpdated(window)
        } else if kind == ObjectIdentifier(NIOHTTP2StreamCreatedEvent.self), let created = event as? NIOHTTP2StreamCreatedEvent {
            self = .created(created)
        } else if kind == ObjectIdentifier(StreamClosedEvent.self), let closed = event as? StreamClosedEvent {
            self = .closed(closed)
        } else {
            self = .other
        }
    }
}
