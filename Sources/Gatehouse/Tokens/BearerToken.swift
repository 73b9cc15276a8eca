import NIOHTTP1

/// Where the request's token was found, if anywhere (RFC 6750 §2.1, plus the configured
/// cookie and header). A query-string `access_token` is deliberately never read.
enum BearerToken: Equatable {
    case absent
    case present(Substring)
    case malformed(String)

    static func extract(from headers: HTTPHeaders, cookieName: String?, headerName: String?) -> BearerToken {
        var authorization: String?
        var authorizationCount = 0
        for header in headers where header.name.utf8.count == 13 && header.name.lowercased() == "authorization" {
            authorizationCount += 1
            authorization = header.value
        }
        if authorizationCount > 1 { return .malformed("more than one Authorization header") }
        if let authorization, let bearer = parseAuthorization(authorization) { return bearer }
        if let headerName, let value = headers.first(name: headerName) {
            let token = value.trimmingSpaces()
            return token.isEmpty || token.contains(" ") ? .malformed("\(headerName) header is not a single token") : .present(token)
        }
        if let cookieName, let token = cookie(named: cookieName, in: headers) {
            return .present(token)
        }
        return .absent
    }

    /// nil when the scheme is not Bearer (the request then simply carries no bearer token).
    private static func parseAuthorization(_ value: String) -> BearerToken? {
        let trimmed = value.trimmingSpaces()
        guard let space = trimmed.firstIndex(of: " ") else {
            return trimmed.lowercased() == "bearer" ? .malformed("Bearer scheme without a token") : nil
        }
        guard trimmed[..<space].lowercased() == "bearer" else { return nil }
        let token = trimmed[space...].trimmingSpaces()
        guard !token.isEmpty, !token.contains(" ") else { return .malformed("Authorization is not \"Bearer <token>\"") }
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
    func trimmingSpaces() -> Substring {
        var slice = self[...]
        while slice.first == " " { slice = slice.dropFirst() }
        while slice.last == " " { slice = slice.dropLast() }
        return slice
    }
}
