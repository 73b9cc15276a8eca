import NIOCore
public import NIOHTTP1
import GatehouseSyntax

extension UpstreamResponseHead {
    /// The relayed head as a header list, for a client that is not sent HTTP/1.1 bytes (an
    /// HTTP/2 stream): the same fields `HTTPHeadWriter` relays, `Content-Length` once, and
    /// Gatehouse's request id.
    public func relayedHead(requestID: String) -> HTTPResponseHead {
        var headers = HTTPHeaders()
        for field in fields where isRelayed(field) {
            headers.add(name: string(field.name), value: string(field.value))
        }
        if let length = relayedContentLength { headers.add(name: "content-length", value: String(length)) }
        headers.add(name: RequestIDField.name, value: requestID)
        return HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: status), headers: headers)
    }

    private func string(_ range: Range<Int>) -> String {
        bytes.getString(at: bytes.readerIndex + range.lowerBound, length: range.count) ?? ""
    }
}
