public import NIOHTTP1

/// `X-Request-Id`, the one home of its name and of setting it: read from the client at intake (`RequestID` accepts or
/// makes one), sent to the upstream (`UpstreamRequestHead`), and written on every answer a client gets, Gatehouse's
/// own and an upstream's alike (`ResponseFields`, `HTTPHeadWriter`, the HTTP/2 door), never the upstream's value.
/// An HTTP/1.1 upstream's head is read by `UpstreamResponseHeadParser`, which needs the name as a `StaticString`.
public enum RequestIDField {
    /// Lower case: HTTP/2 field blocks and lookups.
    @inlinable public static var name: String { "x-request-id" }
    /// As an HTTP/1.1 head writes it.
    @inlinable public static var writtenName: String { "X-Request-Id" }

    /// Sets Gatehouse's request id on an answer's fields, replacing any other.
    @inlinable public static func set(_ requestID: String, on headers: inout HTTPHeaders) {
        headers.replaceOrAdd(name: name, value: requestID)
    }
}
