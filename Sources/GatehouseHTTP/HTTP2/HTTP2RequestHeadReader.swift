public import NIOHTTP1
import GatehouseSyntax

/// An HTTP/2 request's header block read into the request head the rest of Gatehouse judges, by the
/// same rules an HTTP/1.1 request head must follow (docs/reference.md §4.9, §6; docs/security.md H11-H15,
/// H18-H21). nghttp2's own HTTP checks are off (`NGHTTP2Session`): this is the one place the
/// block is judged, in one pass.
///
/// What RFC 9113 makes a malformed message (§8.1.1, §8.2, §8.3) resets the stream (PROTOCOL_ERROR), as
/// NIO did: a field name that is not a lower-case token, a pseudo-header that is unknown, repeated, empty
/// (`:path`) or after a regular field, a missing `:method`, `:scheme` or `:path`, a connection-specific
/// field, a `te` other than `trailers` (in any case, RFC 9110 §10.1.4), CR, LF or NUL in a value, a
/// control or space in a pseudo-header value. What an HTTP/1.1 parser would refuse and an
/// HTTP/2-to-HTTP/1.1 proxy must not forward is answered 400:
/// - a `:method` that is not one of the methods the HTTP/1.1 parser knows (`G(ET`, `get`, `FROB`), CONNECT;
/// - a field value with a control byte (other than HTAB) or DEL, starting or ending with SP or HTAB
///   (RFC 9113 §8.2.1), or whose bytes above 0x7F are not UTF-8 (`FieldValueUTF8`);
/// - a `content-length` that is not one field of 1-18 digits (`+5`, `5, 5`, two fields: RFC 9110 §8.6);
///   the one that passes is sent on as plain digits (the DATA is held against it: `HTTP2DeclaredLength`);
/// - no `:authority` and no `host`; a `host` that differs from `:authority`; more than one `host`
///   (RFC 9113 §8.3.1). The request carries one `host`, `:authority`'s value when it came.
/// A section over `max_header_bytes` (each field counted as `name: value` and CRLF, as on HTTP/1.1) is
/// answered 431 on its stream; the connection and its other streams go on.
///
/// Several `cookie` fields become one, joined with `"; "` (RFC 9113 §8.2.3), so an upstream that reads
/// one Cookie field sees every crumb Gatehouse judged.
public enum HTTP2RequestHeadReader {
    public struct Malformed: Error, Equatable {
        public enum Answer: Equatable, Sendable {
            /// RST_STREAM PROTOCOL_ERROR: malformed by RFC 9113 itself.
            case reset
            /// 400: what the HTTP/1.1 door refuses too.
            case badRequest
            /// 431: over `max_header_bytes`.
            case tooLarge
        }

        /// Said in the 400's body: which rule the request broke.
        public let reason: String
        public let answer: Answer

        public static func reset(_ reason: String) -> Malformed { Malformed(reason: reason, answer: .reset) }
        public static func badRequest(_ reason: String) -> Malformed { Malformed(reason: reason, answer: .badRequest) }
        public static let tooLarge = Malformed(reason: "header section over max_header_bytes", answer: .tooLarge)
    }

    /// A head as read, and the bytes it counted against `max_header_bytes` (its trailers get the rest).
    public struct Head {
        public var head: HTTPRequestHead
        public var sectionBytes: Int
        /// The one `content-length` the block declared, which its DATA is held to (`HTTP2DeclaredLength`).
        public var contentLength: Int?
    }

    /// A block as name-value pairs in the order they came, taken: each field is moved out of it into the head (issue
    /// 57: a block copied field by field cost a retain and a release per string, twelve of each a gRPC call's head).
    public static func read(fields block: consuming HTTP2FieldList, endStream: Bool, maxHeaderBytes: Int) -> Result<Head, Malformed> {
        var block = consume block  // without `consume` a copy, and the first field taken would copy the whole block
        var method: HTTPMethod?
        var methodSeen = false
        var scheme = false
        var path: String?
        var authority: String?
        var hosts: [String] = []
        var cookies: [String] = []
        var contentLength: String?
        var regularFieldSeen = false
        var sectionBytes = 0
        // One list, built once: the host's slot first (filled below), then the regular fields as they come.
        var headers: [(String, String)] = []
        headers.reserveCapacity(block.count + 2)  // one allocation: an array literal first would make two
        headers.append(("host", ""))
        for index in block.indices {
            let (name, value) = HTTP2FieldList.take(&block[index])
            sectionBytes += name.utf8.count + value.utf8.count + 4
            if sectionBytes > maxHeaderBytes { return .failure(.tooLarge) }
            if name.utf8.first == ASCIIByte.colon {
                guard !regularFieldSeen else { return .failure(.reset("pseudo-header field \(name) after a regular field")) }
                guard isPseudoHeaderValue(value) else { return .failure(.reset("invalid value in \(name)")) }
                switch name {
                case ":method" where !methodSeen:
                    methodSeen = true
                    method = RequestMethods.method(value)
                case ":scheme" where !scheme: scheme = true
                case ":path" where path == nil && !value.isEmpty: path = value
                case ":authority" where authority == nil:
                    // A host name is ASCII (RFC 3986 §3.2.2); a byte above 0x7F has been made U+FFFD by now (H20).
                    guard StringBytes.isASCII(value) else { return .failure(.badRequest("invalid :authority")) }
                    authority = value
                default: return .failure(.reset("unknown, repeated or empty pseudo-header field \(name)"))
                }
                continue
            }
            regularFieldSeen = true
            guard HTTP2FieldName.isLowerCaseToken(name) else { return .failure(.reset("invalid field name")) }
            if let refused = checkValue(value, of: name) { return .failure(refused) }
            switch name {
            case "host":
                hosts.append(value)
            case "cookie":
                cookies.append(value)
            case "content-length":
                guard contentLength == nil, let digits = canonicalContentLength(value) else {
                    return .failure(.badRequest("content-length must be one field of digits"))
                }
                contentLength = digits
                headers.append((name, digits))
            case "te":
                // The one TE an HTTP/2 request may carry (RFC 9113 §8.2.2), in any case (RFC 9110 §10.1.4).
                guard value.utf8.elementsEqualIgnoringASCIICase("trailers".utf8) else {
                    return .failure(.reset("te other than trailers"))
                }
                headers.append((name, "trailers"))
            default:
                if HTTP2FieldName.isConnectionSpecific(name) { return .failure(.reset("connection-specific field \(name)")) }
                headers.append((name, value))
            }
        }
        guard methodSeen else { return .failure(.reset("no :method")) }
        guard let method, method != .CONNECT else { return .failure(.badRequest("unknown or malformed :method")) }
        guard scheme, let path else { return .failure(.reset("no :scheme or :path")) }
        guard hosts.count <= 1 else { return .failure(.badRequest("more than one host field")) }
        switch (authority, hosts.first) {
        case (let authority?, nil):
            headers[0].1 = authority
        case (let authority?, let field?):
            guard field.utf8.elementsEqualIgnoringASCIICase(authority.utf8) else {
                return .failure(.badRequest(":authority and host differ"))
            }
            headers[0].1 = authority
        case (nil, let field?):
            headers[0].1 = field
        case (nil, nil):
            return .failure(.badRequest("no :authority or host"))
        }
        if !cookies.isEmpty { headers.insert(("cookie", cookies.joined(separator: "; ")), at: 1) }
        if endStream, impliesBody(method), contentLength == nil {
            headers.append(("content-length", "0"))  // a body method ended with its head: an empty body, said so
        }
        let head = HTTPRequestHead(version: .http2, method: method, uri: path, headers: HTTPHeaders(headers))
        return .success(Head(head: head, sectionBytes: sectionBytes, contentLength: contentLength.flatMap { Int($0) }))
    }

    /// A request trailer section, within what its head left of `max_header_bytes`: no pseudo-header, and
    /// the names and values of a head. Any fault resets the stream (its head may be forwarded already).
    /// A trailer section as name-value pairs in the order they came.
    /// The block is kept as the trailers (it is theirs unchanged).
    public static func readTrailers(fields block: consuming HTTP2FieldList, maxBytes: Int) -> Result<HTTPHeaders, Malformed> {
        var sectionBytes = 0
        for index in block.indices {
            sectionBytes += block[index].0.utf8.count + block[index].1.utf8.count + 4
            guard sectionBytes <= maxBytes else { return .failure(.reset("trailer section over max_header_bytes")) }
            guard HTTP2FieldName.isLowerCaseToken(block[index].0), !HTTP2FieldName.isConnectionSpecific(block[index].0),
                  checkValue(block[index].1, of: block[index].0) == nil
            else { return .failure(.reset("invalid trailer field \(block[index].0)")) }
        }
        return .success(HTTPHeaders(consume block))
    }

    /// RFC 9110 §5.5 field-value bytes (what the HTTP/1.1 parser accepts between its trimmed OWS), no SP or
    /// HTAB at either end (RFC 9113 §8.2.1: HTTP/2 has no OWS to trim), and UTF-8 above 0x7F. NUL, CR and
    /// LF make the message malformed (RFC 9113 §8.2.1): the stream is reset, as NIO did.
    private static func checkValue(_ value: String, of name: String) -> Malformed? {
        StringBytes.withBytes(of: value) { bytes in
            if let first = bytes.first, ASCIIByte.isOptionalWhitespace(first) { return .badRequest("invalid value in field \(name)") }
            if let last = bytes.last, ASCIIByte.isOptionalWhitespace(last) { return .badRequest("invalid value in field \(name)") }
            var nonASCII = false
            for byte in bytes where byte < 0x20 || byte >= 0x7F {
                if byte == 0 || byte == ASCIIByte.carriageReturn || byte == ASCIIByte.lineFeed { return .reset("NUL, CR or LF in field \(name)") }
                if byte >= 0x80 {
                    nonASCII = true
                } else if byte != ASCIIByte.tab {
                    return .badRequest("invalid value in field \(name)")
                }
            }
            if nonASCII, !FieldValueUTF8.isAccepted(bytes) { return .badRequest("field \(name) is not UTF-8") }
            return nil
        }
    }

    /// Pseudo-header values hold no control byte, space or DEL (the request line they become has no room
    /// for them); bytes above 0x7F are left to the target's own rules.
    private static func isPseudoHeaderValue(_ value: String) -> Bool {
        StringBytes.withBytes(of: value) { !$0.contains { $0 <= 0x20 || $0 == 0x7F } }
    }

    /// 1 to 18 digits (the HTTP/1.1 parser's rule: no sign, no list, no overflow) as plain digits.
    private static func canonicalContentLength(_ value: String) -> String? {
        let bytes = value.utf8
        guard !bytes.isEmpty, bytes.count <= 18, bytes.allSatisfy({ ASCIIByte.decimalValue($0) != nil }) else { return nil }
        guard bytes.count > 1, bytes.first == UInt8(ascii: "0") else { return value }
        return String(Int(value)!)  // leading zeros dropped
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
