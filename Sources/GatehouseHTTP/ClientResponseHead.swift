public import NIOHTTP1
import GatehouseSyntax

/// A response head on its way to the client, in the form its source has it; each door writes it in its own
/// framing (the HTTP/1.1 door as bytes, an HTTP/2 stream as a header block).
public enum ClientResponseHead {
    /// A head as fields: an answer Gatehouse made, or an HTTP/2 upstream's (hop-by-hop fields gone, request id set).
    case fields(HTTPResponseHead)
    /// An HTTP/1.1 upstream's head as its bytes arrived: relayed by byte ranges to an HTTP/1.1 client, with
    /// Gatehouse's request id (`HTTPHeadWriter.relayedResponseHead`).
    case relayed(UpstreamResponseHead, requestID: String)
    /// An HTTP/2 upstream's head as its block arrived (read by `HTTP2UpstreamLeg.isWellFormed`: names in lower case):
    /// relayed field by field to an HTTP/2 client without making `HTTPHeaders` (`ResponseFields.isRelayed`, then
    /// Gatehouse's request id), made into fields for an HTTP/1.1 client (`asFields`).
    case http2(status: Int, fields: HTTP2FieldList, requestID: String)

    public var statusCode: Int {
        switch self {
        case .fields(let head): Int(head.status.code)
        case .relayed(let head, _): head.status
        case .http2(let status, _, _): status
        }
    }

    /// The first value of the field `lowercasedName` (an MCP server's `mcp-session-id`): read from the bytes of a relayed
    /// head, without making its fields.
    public func firstValue(of lowercasedName: String) -> String? {
        switch self {
        case .fields(let head): return head.headers.first(name: lowercasedName)
        case .relayed(let head, _): return head.firstValue(of: lowercasedName)
        case .http2(_, let fields, let requestID):
            if lowercasedName == RequestIDField.name { return requestID }
            return ResponseFields.isRelayed(lowercasedName) ? fields.first(where: { $0.0 == lowercasedName })?.1 : nil
        }
    }

    /// The head as fields, for a door that does not write HTTP/1.1 bytes.
    public var asFields: HTTPResponseHead {
        switch self {
        case .fields(let head): head
        case .relayed(let head, let requestID): head.relayedHead(requestID: requestID)
        case .http2(let status, let fields, let requestID):
            HTTPResponseHead(version: .http2, status: HTTPResponseStatus(statusCode: status), headers: ResponseFields.relayed(fields, requestID: requestID))
        }
    }
}
