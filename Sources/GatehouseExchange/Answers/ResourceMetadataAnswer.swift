import NIOHTTP1
import GatehousePolicy

/// A `[[resource]]`'s Protected Resource Metadata (RFC 9728 §3), answered by Gatehouse on the resource's host, no
/// token needed, never forwarded (docs/reference.md §17.1).
enum ResourceMetadataAnswer {
    /// How long a client may keep the document.
    static let maxAgeSeconds = 300

    static func response(_ resource: ProtectedResource, method: HTTPMethod) -> LocalResponse {
        guard method == .GET || method == .HEAD else {
            var response = LocalResponse.json(.methodNotAllowed, "{\"error\":\"method_not_allowed\"}")
            response.headers.add(name: "Allow", value: "GET, HEAD")
            return response
        }
        var response = LocalResponse.json(.ok, resource.metadataJSON)
        response.headers.add(name: "Cache-Control", value: "max-age=\(maxAgeSeconds)")
        // A public document that browser-based clients (an MCP inspector) read from another origin.
        response.headers.add(name: "Access-Control-Allow-Origin", value: "*")
        return response
    }
}
