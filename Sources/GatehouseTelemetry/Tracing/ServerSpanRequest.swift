package import GatehouseSyntax

/// What a request's server span says of the request (the OpenTelemetry HTTP server conventions): kept as the request
/// gave it, and written as attributes only when the span is exported. Never the query, a token, a cookie or a proof.
package struct ServerSpanRequest {
    package let method: String
    /// The request target as sent: only its path (up to a `?`) is written.
    package let target: String
    package let clientIP: String
    /// `network.protocol.version`: `1.0`, `1.1`, `2`.
    package let protocolVersion: String
    package let host: String?
    package let userAgent: String?

    package func write(into writer: inout ProtobufWriter) {
        OTLPTraceEncoding.attribute("http.request.method", .string(method), into: &writer)
        OTLPTraceEncoding.attribute("url.path", target[..<(target.utf8.firstIndex(of: UInt8(ascii: "?")) ?? target.endIndex)], into: &writer)
        OTLPTraceEncoding.attribute("client.address", .string(clientIP), into: &writer)
        OTLPTraceEncoding.attribute("network.protocol.version", .string(protocolVersion), into: &writer)
        if let host {
            let (name, port) = Self.split(host)
            OTLPTraceEncoding.attribute("server.address", name, into: &writer)
            if let port { OTLPTraceEncoding.attribute("server.port", .int(port), into: &writer) }
        }
        if let userAgent { OTLPTraceEncoding.attribute("user_agent.original", .string(userAgent), into: &writer) }
    }

    /// `host[:port]`, `[v6]:port`.
    package static func split(_ authority: String) -> (Substring, Int64?) {
        guard let colon = authority.lastIndex(of: ":"), !authority.hasSuffix("]"),
              let port = Int64(authority[authority.index(after: colon)...])
        else { return (authority[...], nil) }
        return (authority[..<colon], port)
    }
}
