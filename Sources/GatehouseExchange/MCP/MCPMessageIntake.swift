import NIOCore
import NIOHTTP1
import GatehouseSyntax
import GatehouseConfig
import GatehousePolicy

/// What the core does with an MCP server's POST before judging it (docs/reference.md §17.3): which requests carry a
/// message, the bound on its size, and reading it from the body held for the upstream (forwarded byte for byte after).
enum MCPMessageIntake {
    /// `Content-Type: application/json` (any parameters, any case): the one media type of an MCP message. A POST of
    /// another type carries no message (its rules see `mcp.method` empty; routes with `mcp_methods` do not match).
    static func isJSON(_ headers: HTTPHeaders) -> Bool {
        headers.first(name: "content-type").map { MediaType.hasEssence($0, "application/json") } ?? false
    }

    /// The `Content-Length` a head declares (the doors have checked it is one valid number), so that a message too
    /// large is refused before any of it is read.
    static func declaredLength(_ headers: HTTPHeaders) -> Int? {
        headers.first(name: "content-length").flatMap { Int($0) }
    }

    /// 413: the message is larger than the resource's `max_message_bytes` (its rest is not read: the connection closes).
    static func tooLarge(_ resource: ProtectedResource) -> LocalResponse {
        let refusal = MCPMessage.Refusal(
            code: -32600, message: "Invalid Request: the message is larger than \(resource.settings.maxMessageBytes) bytes (max_message_bytes)")
        var response = LocalResponse.json(.payloadTooLarge, refusal.responseJSON)
        response.closeConnection = true
        return response
    }

    /// The message of the body held so far (all of it: the request has ended).
    static func read(_ buffers: [ByteBuffer]) -> Result<MCPMessage, MCPMessage.Refusal> {
        if buffers.count == 1 { return MCPMessage.read(buffers[0].readableBytesView) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(buffers.reduce(0) { $0 + $1.readableBytes })
        for buffer in buffers { bytes.append(contentsOf: buffer.readableBytesView) }
        return MCPMessage.read(bytes)
    }
}
