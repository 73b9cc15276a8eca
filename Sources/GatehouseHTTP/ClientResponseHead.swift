public import NIOHTTP1

/// A response head on its way to the client, in the form its source has it; each door writes it in its own
/// framing (the HTTP/1.1 door as bytes, an HTTP/2 stream as a header block).
public enum ClientResponseHead {
    /// A head as fields: an answer Gatehouse made, or an HTTP/2 upstream's (hop-by-hop fields gone, request id set).
    case fields(HTTPResponseHead)
    /// An HTTP/1.1 upstream's head as its bytes arrived: relayed by byte ranges to an HTTP/1.1 client, with
    /// Gatehouse's request id (`HTTPHeadWriter.relayedResponseHead`).
    case relayed(UpstreamResponseHead, requestID: String)

    public var statusCode: Int {
        switch self {
        case .fields(let head): Int(head.status.code)
        case .relayed(let head, _): head.status
        }
    }

    /// The first value of the field `lowercasedName` (an MCP server's `mcp-session-id`): read from the bytes of a relayed
    /// head, without making its fields.
    public func firstValue(of lowercasedName: String) -> String? {
        switch self {
        case .fields(let head): return head.headers.first(name: lowercasedName)
        case .relayed(let head, _): return head.firstValue(of: lowercasedName)
        }
    }

    /// The head as fields, for a door that does not write HTTP/1.1 bytes.
    public var asFields: HTTPResponseHead {
        switch self {
        case .fields(let head): head
        case .relayed(let head, let requestID): head.relayedHead(requestID: requestID)
        }
    }
}
