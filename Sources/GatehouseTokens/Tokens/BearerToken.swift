package import NIOHTTP1
import GatehouseSyntax

/// Where the request's token was found, if anywhere (RFC 6750 §2.1, plus the configured
/// cookie and header). A query-string `access_token` is deliberately never read.
package enum BearerToken: Equatable {
    case absent
    case present(Substring)
    case malformed(String)

    static func extract(from headers: HTTPHeaders, cookieName: String?, headerName: String?) -> BearerToken {
        extractWithScheme(from: headers, cookieName: cookieName, headerName: headerName).token
    }

    /// The token and the scheme it came with: `Authorization: DPoP <token>` (RFC 9449 §7.1) is read like
    /// `Bearer`, and the sender constraint judged later decides whether the scheme fits the token.
    package static func extractWithScheme(
        from headers: HTTPHeaders, cookieName: String?, headerName: String?
    ) -> (token: BearerToken, scheme: SenderEvidence.Scheme) {
        var authorization: String?
        var authorizationCount = 0
        for header in headers where header.name.utf8.count == 13 && header.name.utf8.elementsEqualIgnoringASCIICase("authorization".utf8) {
            authorizationCount += 1
            authorization = header.value
        }
        return extractWithScheme(
            authorization: authorization, authorizationCount: authorizationCount, from: headers, cookieName: cookieName, headerName: headerName)
    }

    /// `extractWithScheme(from:cookieName:headerName:)` with the Authorization fields already read (the last value, and
    /// how many there are) by a pass of the caller's over the fields.
    package static func extractWithScheme(
        authorization: String?, authorizationCount: Int, from headers: HTTPHeaders, cookieName: String?, headerName: String?
    ) -> (token: BearerToken, scheme: SenderEvidence.Scheme) {
        if authorizationCount > 1 { return (.malformed("more than one Authorization header"), .bearer) }
        if let authorization {
            if let bearer = parseAuthorization(authorization, scheme: bearerScheme) { return (bearer, .bearer) }
            if let dpop = parseAuthorization(authorization, scheme: dpopScheme) { return (dpop, .dpop) }
        }
        if let headerName, let value = headers.first(name: headerName) {
            let token = value.trimmingSpaces()
            return (token.isEmpty || token.contains(" ") ? .malformed("\(headerName) header is not a single token") : .present(token), .bearer)
        }
        if let cookieName, let token = cookie(named: cookieName, in: headers) {
            return (.present(token), .bearer)
        }
        return (.absent, .bearer)
    }

    private static let bearerScheme = (lowered: "bearer".utf8, name: "Bearer")
    private static let dpopScheme = (lowered: "dpop".utf8, name: "DPoP")

    /// nil when the scheme is not the one asked for (the request then simply carries no such token).
    /// Works on UTF-8 bytes: this runs on every request, and tokens are ~1 KiB of ASCII.
    private static func parseAuthorization(_ value: String, scheme: (lowered: String.UTF8View, name: String)) -> BearerToken? {
        let bytes = value.utf8
        var start = bytes.startIndex
        var end = bytes.endIndex
        while start < end, bytes[start] == UInt8(ascii: " ") { start = bytes.index(after: start) }
        while start < end, bytes[bytes.index(before: end)] == UInt8(ascii: " ") { end = bytes.index(before: end) }
        var cursor = start
        for expected in scheme.lowered {
            guard cursor < end, bytes[cursor] | 0x20 == expected else { return nil }
            cursor = bytes.index(after: cursor)
        }
        if cursor == end { return .malformed("\(scheme.name) scheme without a token") }
        if bytes[cursor] != UInt8(ascii: " ") {
            // "Bearerx …" is a scheme of another name; "Bearer\t…" or "Bearer,…" is a bearer credential that
            // is not RFC 9110's `scheme SP token68`: refused as such, not taken for a missing token.
            return ASCIIByte.isTokenByte(bytes[cursor]) ? nil : .malformed("Authorization is not \"\(scheme.name) <token>\"")
        }
        while cursor < end, bytes[cursor] == UInt8(ascii: " ") { cursor = bytes.index(after: cursor) }
        let token = Substring(value.utf8[cursor..<end])
        guard !token.isEmpty, !token.containsByte(UInt8(ascii: " ")) else {
            return .malformed("Authorization is not \"\(scheme.name) <token>\"")
        }
        return .present(token)
    }

    private static func cookie(named name: String, in headers: HTTPHeaders) -> Substring? {
        for header in headers[canonicalForm: "cookie"] {
            for pair in header.split(separator: ";") {
                let trimmed = pair.trimmingSpaces()
                guard let equals = trimmed.firstIndex(of: "="), trimmed[..<equals] == name else { continue }
                let value = trimmed[trimmed.index(after: equals)...]
                return value.isEmpty ? nil : value
            }
        }
        return nil
    }
}

extension StringProtocol where SubSequence == Substring {
    package func trimmingSpaces() -> Substring {
        var slice = self[...]
        while slice.first == " " { slice = slice.dropFirst() }
        while slice.last == " " { slice = slice.dropLast() }
        return slice
    }
}

extension Substring {
    /// The UTF-8 bytes, copied in one go from contiguous storage (a byte-by-byte copy of a ~1 KiB
    /// token showed up in profiles).
    package var utf8Bytes: [UInt8] {
        utf8.withContiguousStorageIfAvailable { Array($0) } ?? Array(utf8)
    }

    func containsByte(_ byte: UInt8) -> Bool {
        utf8.withContiguousStorageIfAvailable { StringBytes.contains(byte, in: $0) } ?? utf8.contains(byte)
    }
}
