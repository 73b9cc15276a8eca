package import NIOHTTP1
import GatehouseTokens

/// The assertion keys as a JWKS document (docs/reference.md §15): at the admin port's `/.well-known/jwks.json` and
/// at the client port's `/.gatehouse/jwks.json`, with a `max-age` and an `ETag` (a matching `If-None-Match` gets 304).
package struct PublishedJWKS {
    package let status: HTTPResponseStatus
    package let headers: HTTPHeaders
    package let body: String

    /// - Parameter signer: the current configuration's; nil without `[assertion]` (404).
    package init(_ signer: AssertionSigner?, ifNoneMatch: [String]) {
        guard let signer else {
            self.init(status: .notFound, headers: ["Content-Type": "application/json", "Cache-Control": "no-store"], body: "{\"error\":\"not_found\"}")
            return
        }
        let headers: HTTPHeaders = [
            "Content-Type": "application/json", "Cache-Control": "public, max-age=\(AssertionSigner.jwksMaxAge)", "ETag": signer.jwksETag,
        ]
        if Self.matches(ifNoneMatch, signer.jwksETag) {
            self.init(status: .notModified, headers: headers, body: "")
        } else {
            self.init(status: .ok, headers: headers, body: signer.jwks)
        }
    }

    private init(status: HTTPResponseStatus, headers: HTTPHeaders, body: String) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// RFC 9110 §13.1.2: `*`, or any listed tag equal to ours by the weak comparison.
    private static func matches(_ fields: [String], _ etag: String) -> Bool {
        for field in fields {
            for candidate in field.split(separator: ",") {
                var tag = candidate.trimmingSpaces()
                if tag == "*" { return true }
                if tag.hasPrefix("W/") { tag.removeFirst(2) }
                if tag == etag { return true }
            }
        }
        return false
    }
}

extension LocalResponse {
    /// `/.gatehouse/jwks.json` on the client port: answered before any token is looked at.
    static func publishedJWKS(_ signer: AssertionSigner?, answering head: HTTPRequestHead) -> LocalResponse {
        let published = PublishedJWKS(signer, ifNoneMatch: head.headers[canonicalForm: "if-none-match"].map(String.init))
        return LocalResponse(status: published.status, headers: published.headers, body: published.body)
    }
}
