import NIOHPACK
import NIOHTTP1

/// An HTTP/2 request's header block read into the request head the rest of Gatehouse judges, by the
/// same rules an HTTP/1.1 request head must follow (docs/reference.md §4.9, §6; docs/security.md H11-H14).
///
/// NIO's HTTP/2 handler has already refused what RFC 9113 makes a protocol error of the block itself
/// (pseudo-header order and set, upper-case or non-token names, connection-specific fields, CR/LF/NUL in
/// values). What it lets through and an HTTP/2-to-HTTP/1.1 proxy must not, this refuses:
/// - a `:method` that is not one of the methods the HTTP/1.1 parser knows (`G(ET`, `get`);
/// - a field value with a control byte (other than HTAB) or DEL, or starting or ending with SP or HTAB
///   (RFC 9113 §8.2.1);
/// - no `:authority` and no `host`; a `host` that differs from `:authority`; more than one `host`
///   (RFC 9113 §8.3.1). The request carries one `host`, `:authority`'s value when it came.
///
/// Several `cookie` fields become one, joined with `"; "` (RFC 9113 §8.2.3), so an upstream that reads
/// one Cookie field sees every crumb Gatehouse judged.
enum HTTP2RequestHeadReader {
    struct Malformed: Error, Equatable {
        /// Said in the 400's body: which rule the request broke.
        let reason: String
    }

    static func read(_ block: HPACKHeaders, endStream: Bool) -> Result<HTTPRequestHead, Malformed> {
        var method: HTTPMethod?
        var path: String?
        var authority: String?
        var hosts: [String] = []
        var cookies: [String] = []
        var hasContentLength = false
        // One list, built once: the host's slot first (filled below), then the regular fields as they come.
        var headers: [(String, String)] = [("host", "")]
        headers.reserveCapacity(block.count + 2)
        for (name, value, _) in block {
            if name.utf8.first == ASCIIByte.colon {
                switch name {
                case ":method":
                    guard let known = RequestMethods.method(value) else {
                        return .failure(Malformed(reason: "unknown or malformed :method"))
                    }
                    method = known
                case ":path": path = value
                case ":authority": authority = value
                default: break  // :scheme (checked present by NIO), :protocol
                }
                continue
            }
            guard isValidFieldValue(value) else { return .failure(Malformed(reason: "invalid value in field \(name)")) }
            switch name {
            case "host": hosts.append(value)
            case "cookie": cookies.append(value)
            default:
                if name == "content-length" { hasContentLength = true }
                headers.append((name, value))
            }
        }
        guard let method, let path else { return .failure(Malformed(reason: "no :method or :path")) }
        guard hosts.count <= 1 else { return .failure(Malformed(reason: "more than one host field")) }
        switch (authority, hosts.first) {
        case (let authority?, nil):
            headers[0].1 = authority
        case (let authority?, let field?):
            guard field.utf8.elementsEqualIgnoringASCIICase(authority.utf8) else {
                return .failure(Malformed(reason: ":authority and host differ"))
            }
            headers[0].1 = authority
        case (nil, let field?):
            headers[0].1 = field
        case (nil, nil):
            return .failure(Malformed(reason: "no :authority or host"))
        }
        if !cookies.isEmpty { headers.insert(("cookie", cookies.joined(separator: "; ")), at: 1) }
        if endStream, impliesBody(method), !hasContentLength {
            headers.append(("content-length", "0"))  // a body method ended with its head: an empty body, said so
        }
        return .success(HTTPRequestHead(version: .http2, method: method, uri: path, headers: HTTPHeaders(headers)))
    }

    /// A request trailer section: the same value rule as the head; pseudo-header fields are NIO's to refuse.
    static func readTrailers(_ block: HPACKHeaders) -> Result<HTTPHeaders, Malformed> {
        var fields: [(String, String)] = []
        fields.reserveCapacity(block.count)
        for (name, value, _) in block {
            guard isValidFieldValue(value) else { return .failure(Malformed(reason: "invalid value in trailer field \(name)")) }
            fields.append((name, value))
        }
        return .success(HTTPHeaders(fields))
    }

    /// RFC 9110 §5.5 field-value bytes (what the HTTP/1.1 parser accepts between its trimmed OWS), and
    /// no SP or HTAB at either end (RFC 9113 §8.2.1: HTTP/2 has no OWS to trim).
    static func isValidFieldValue(_ value: String) -> Bool {
        let bytes = value.utf8
        if let first = bytes.first, ASCIIByte.isOptionalWhitespace(first) { return false }
        if let last = bytes.last, ASCIIByte.isOptionalWhitespace(last) { return false }
        return bytes.allSatisfy(ASCIIByte.isFieldValueByte)
    }

    /// Methods whose request usually has a body: NIO's codec said `content-length: 0` for them when the
    /// stream ended with its head, and the HTTP/1.1 upstream head keeps saying so.
    private static func impliesBody(_ method: HTTPMethod) -> Bool {
        switch method {
        case .GET, .HEAD, .DELETE, .CONNECT, .TRACE: false
        default: true
        }
    }
}
