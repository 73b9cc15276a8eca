public import NIOHTTP1

/// The request methods llhttp knows (Gatehouse refuses any other, over HTTP/1.1 and HTTP/2), common ones first.
public enum RequestMethods {
    @usableFromInline static let table: [([UInt8], HTTPMethod)] = [
        "GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH", "CONNECT", "TRACE", "COPY", "LOCK", "MKCOL", "MOVE",
        "PROPFIND", "PROPPATCH", "SEARCH", "UNLOCK", "BIND", "REBIND", "UNBIND", "ACL", "REPORT", "MKACTIVITY", "CHECKOUT",
        "MERGE", "M-SEARCH", "NOTIFY", "SUBSCRIBE", "UNSUBSCRIBE", "PURGE", "MKCALENDAR", "LINK", "UNLINK", "SOURCE", "QUERY",
    ].map { (Array($0.utf8), HTTPMethod(rawValue: $0)) }

    @inlinable public static func method(_ bytes: UnsafeRawBufferPointer) -> HTTPMethod? {
        for (name, method) in table where name.count == bytes.count && bytes.elementsEqual(name) { return method }
        return nil
    }

    /// Whether a request the upstream may have received can be sent again (RFC 9110 §9.2.2): the one
    /// rule both front doors retry by.
    @inlinable public static func isIdempotent(_ method: HTTPMethod) -> Bool {
        switch method {
        case .GET, .HEAD, .OPTIONS, .TRACE, .PUT, .DELETE: true
        default: false
        }
    }

    /// The same rule for a method given as a string (an HTTP/2 `:method`): one of the table's, exactly.
    @inlinable public static func method(_ name: String) -> HTTPMethod? {
        var name = name
        return name.withUTF8 { method(UnsafeRawBufferPointer($0)) }
    }
}
