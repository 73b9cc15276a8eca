package import NIOHTTP1
import GatehouseSyntax

/// How a gRPC client is told no (gRPC over HTTP/2, "Responses"): HTTP 200, `content-type:
/// application/grpc`, and a trailers-only response whose `grpc-status` the client libraries
/// surface (`UNAUTHENTICATED` with the message, not a protocol error).
package enum GRPCRefusal {
    package enum Code: Int {
        case deadlineExceeded = 4
        case permissionDenied = 7
        case internalError = 13
        case unavailable = 14
        case unauthenticated = 16
    }

    /// Whether the request is a gRPC call: `application/grpc`, `application/grpc+proto`, `+json`, ….
    /// Read in place, in any case: lower-casing the value first made a string of it on every gRPC call.
    package static func isGRPC(_ headers: HTTPHeaders) -> Bool {
        guard let type = headers.first(name: "content-type") else { return false }
        let utf8 = type.utf8
        guard utf8.count >= grpcType.count,
              zip(utf8, grpcType).allSatisfy({ ASCIIByte.lowercased($0) == $1 })
        else { return false }
        guard utf8.count > grpcType.count else { return true }
        let next = utf8[utf8.index(utf8.startIndex, offsetBy: grpcType.count)]
        return next == UInt8(ascii: "+") || next == ASCIIByte.semicolon
    }

    private static let grpcType: [UInt8] = Array("application/grpc".utf8)

    /// The gRPC form of a local answer: its status mapped to a gRPC code, its message in
    /// `grpc-message`, its `WWW-Authenticate` / `Retry-After` kept as headers.
    package static func response(for local: LocalResponse, message: String) -> LocalResponse {
        var headers = HTTPHeaders()
        headers.add(name: "content-type", value: "application/grpc")
        headers.add(name: "grpc-status", value: String(code(for: local.status).rawValue))
        headers.add(name: "grpc-message", value: percentEncoded(message))
        for name in ["www-authenticate", "retry-after", "cache-control"] {
            for value in local.headers[name] { headers.add(name: name, value: value) }
        }
        return LocalResponse(status: .ok, headers: headers, body: "")
    }

    /// The message of a local answer that has none of its own (502 / 503 / 504, 400, own endpoints).
    static func defaultMessage(_ status: HTTPResponseStatus) -> String {
        switch status {
        case .gatewayTimeout: "upstream_timeout: the upstream did not answer in time"
        case .badGateway, .serviceUnavailable: "upstream_unavailable: the upstream cannot be reached"
        default: "\(status.code) \(status.reasonPhrase)"
        }
    }

    package static func code(for status: HTTPResponseStatus) -> Code {
        switch status {
        case .unauthorized: .unauthenticated
        case .forbidden: .permissionDenied
        case .serviceUnavailable, .badGateway: .unavailable
        case .gatewayTimeout: .deadlineExceeded
        default: .internalError
        }
    }

    /// gRPC's percent-encoding of `grpc-message`: bytes outside 0x20-0x7E, and `%`, as `%XX`.
    package static func percentEncoded(_ message: String) -> String {
        var encoded: [UInt8] = []
        encoded.reserveCapacity(message.utf8.count)
        for byte in message.utf8 {
            if byte >= 0x20 && byte <= 0x7E && byte != ASCIIByte.percent {
                encoded.append(byte)
            } else {
                encoded += [ASCIIByte.percent, ASCIIByte.upperHexDigit(byte >> 4), ASCIIByte.upperHexDigit(byte & 0x0F)]
            }
        }
        return String(decoding: encoded, as: UTF8.self)
    }
}
