public import NIOHTTP1
public import GatehouseSyntax

/// The head of an answer a client gets, on every path (an HTTP/1.1 or HTTP/2 upstream, either door, an ext_authz
/// answer): an upstream's hop-by-hop fields never reach the client (`HopByHopFields`, the one list; an HTTP/1.1
/// upstream's head is read by it in `UpstreamResponseHeadParser`, which also drops what its `Connection` names), and
/// every answer carries Gatehouse's request id, never the upstream's.
public enum ResponseFields {
    /// An HTTP/2 upstream's response fields as relayed: its pseudo-header fields are not fields, its hop-by-hop ones
    /// and its request id are dropped, Gatehouse's request id is added.
    public static func relayed(_ block: HTTP2FieldList, requestID: String) -> HTTPHeaders {
        var fields: [(String, String)] = []
        fields.reserveCapacity(block.count + 1)
        for (name, value) in block where isRelayed(name) { fields.append((name, value)) }
        fields.append((RequestIDField.name, requestID))
        return HTTPHeaders(fields)
    }

    /// Whether a field of an HTTP/2 upstream's block (its name in lower case) is relayed: not a pseudo-header field,
    /// not hop-by-hop, not the upstream's request id.
    @inlinable public static func isRelayed(_ lowercasedName: String) -> Bool {
        lowercasedName.utf8.first != ASCIIByte.colon && lowercasedName != RequestIDField.name && !HopByHopFields.contains(lowercasedName.utf8)
    }

    /// Whether a field (its name in lower case) is written on an HTTP/2 answer: the HTTP/2 doors' last guard, by
    /// the same list (RFC 9113 §8.2.2's connection-specific fields are among them).
    @inlinable public static func isWrittenOnHTTP2(_ lowercasedName: String) -> Bool {
        !HopByHopFields.contains(lowercasedName.utf8)
    }
}
