import NIOCore
package import NIOHTTP1
import GatehouseSyntax
import GatehouseTokens
package import GatehouseVocabulary

/// The 401 / 403 / 503 answer of docs/reference.md §4: status, `WWW-Authenticate` (RFC 6750 §3) and a JSON body.
package enum AuthErrorResponse {
    /// What a refusal under a `[[resource]]` adds to its `Bearer` challenge (docs/reference.md §17.1): where the
    /// resource's metadata is (RFC 9728 §5.1), and the scopes the matched route requires (MCP's scope selection).
    package struct ResourceChallenge {
        package var metadataURL: String
        package var scopes: [String]
    }

    package static func make(
        _ failure: AuthFailure, requestID: String, retryAfterSeconds: Int, resource: ResourceChallenge? = nil
    ) -> (HTTPResponseStatus, HTTPHeaders, String) {
        // Everything but the request id (and a 403's scopes, a 503's delay) depends on the reason
        // alone: built once per reason, so a flood of bad tokens costs a lookup and one append.
        let (headers, bodyPrefix) = switch failure.reason {
        case _ where resource != nil:
            parts(failure, retryAfterSeconds: retryAfterSeconds, resource: resource)
        case _ where failure.dpopChallenge != nil, .insufficientScope, .keysUnavailable, .dpopUnavailable, .introspectionUnavailable,
            .introspectionBusy:
            parts(failure, retryAfterSeconds: retryAfterSeconds)
        default:
            prebuilt[failure.reason] ?? parts(failure, retryAfterSeconds: retryAfterSeconds)
        }
        return (failure.status, headers, bodyPrefix + requestID.jsonQuoted + "}")
    }

    private static let prebuilt: [FailureReason: (HTTPHeaders, String)] = Dictionary(
        uniqueKeysWithValues: FailureReason.allCases.map { ($0, parts(AuthFailure($0, ""), retryAfterSeconds: 0)) })

    /// The headers, and the body up to the request id's value.
    private static func parts(_ failure: AuthFailure, retryAfterSeconds: Int, resource: ResourceChallenge? = nil) -> (HTTPHeaders, String) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        headers.add(name: "Cache-Control", value: "no-store")
        let message = failure.reason.message
        if let challenge = failure.dpopChallenge {
            addDPoPChallenge(challenge, for: failure, message: message, resource: resource, to: &headers)
        } else {
            addBearerChallenge(for: failure, message: message, resource: resource, to: &headers)
        }
        if failure.status == .serviceUnavailable {
            headers.add(name: "Retry-After", value: String(failure.retryAfterSeconds ?? retryAfterSeconds))
        }
        let bodyPrefix = "{\"error\":\(failure.reason.errorCode.jsonQuoted),\"reason\":\(failure.reason.rawValue.jsonQuoted),"
            + "\"message\":\(message.jsonQuoted),\"request_id\":"
        return (headers, bodyPrefix)
    }

    private static func addBearerChallenge(for failure: AuthFailure, message: String, resource: ResourceChallenge?, to headers: inout HTTPHeaders) {
        switch failure.reason {
        case .missingToken:
            headers.add(name: "WWW-Authenticate", value: "Bearer realm=\"gatehouse\"" + resourceParameters(resource))
        case .insufficientScope:
            let scope = quotable(failure.requiredScopes)
            headers.add(
                name: "WWW-Authenticate",
                value: "Bearer realm=\"gatehouse\", error=\"insufficient_scope\", scope=\"\(scope)\"" + resourceParameters(resource, withScope: false))
        case .forbidden, .keysUnavailable, .dpopUnavailable, .introspectionUnavailable, .introspectionBusy, .originNotAllowed, .sessionMismatch:
            break
        default:
            headers.add(
                name: "WWW-Authenticate",
                value: "Bearer realm=\"gatehouse\", error=\"invalid_token\", error_description=\"\(message)\"" + resourceParameters(resource))
        }
    }

    /// `, resource_metadata="…"` and, when the route requires scopes (and the challenge does not name them already),
    /// `, scope="…"`; nothing outside a resource.
    private static func resourceParameters(_ resource: ResourceChallenge?, withScope: Bool = true) -> String {
        guard let resource else { return "" }
        var text = ", resource_metadata=\"\(resource.metadataURL.filter { $0 != "\"" && $0 != "\\" })\""
        if withScope && !resource.scopes.isEmpty { text += ", scope=\"\(quotable(resource.scopes))\"" }
        return text
    }

    /// Scopes as one quoted-string's content (RFC 6750 §3: space-separated; `"` and `\\` cannot appear).
    private static func quotable(_ scopes: [String]) -> String {
        scopes.joined(separator: " ").filter { $0 != "\"" && $0 != "\\" }
    }

    /// The algorithms a DPoP proof may be signed with (every asymmetric one Gatehouse verifies).
    package static let dpopAlgorithms = "ES256 ES384 ES512 PS256 PS384 PS512 RS256 RS384 RS512 EdDSA"

    /// RFC 9449 §7.1: the `DPoP` challenge names the error (none for a missing token or a bearer token on a
    /// route that requires DPoP); a `Bearer` challenge follows where bearer tokens are accepted.
    private static func addDPoPChallenge(
        _ challenge: DPoPChallenge, for failure: AuthFailure, message: String, resource: ResourceChallenge?, to headers: inout HTTPHeaders
    ) {
        var value = "DPoP algs=\"\(dpopAlgorithms)\""
        switch failure.reason {
        case .missingToken, .dpopRequired, .forbidden, .keysUnavailable, .dpopUnavailable, .introspectionUnavailable, .introspectionBusy,
            .originNotAllowed, .sessionMismatch:
            break
        default:
            value += ", error=\"\(failure.reason.errorCode)\", error_description=\"\(message)\""
        }
        if failure.status != .serviceUnavailable && failure.status != .notFound && failure.reason != .forbidden && failure.reason != .originNotAllowed {
            headers.add(name: "WWW-Authenticate", value: value + resourceParameters(resource))
            if challenge.offersBearer { headers.add(name: "WWW-Authenticate", value: "Bearer realm=\"gatehouse\"" + resourceParameters(resource)) }
        }
        if let nonce = challenge.nonce { headers.add(name: "DPoP-Nonce", value: nonce) }
    }
}
