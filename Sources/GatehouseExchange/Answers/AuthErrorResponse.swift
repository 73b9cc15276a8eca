import NIOCore
package import NIOHTTP1
import GatehouseSyntax
package import GatehouseTokens

/// The 401 / 403 / 503 answer of docs/reference.md §4: status, `WWW-Authenticate` (RFC 6750 §3) and a JSON body.
package enum AuthErrorResponse {
    package static func make(_ failure: AuthFailure, requestID: String, retryAfterSeconds: Int) -> (HTTPResponseStatus, HTTPHeaders, String) {
        // Everything but the request id (and a 403's scopes, a 503's delay) depends on the reason
        // alone: built once per reason, so a flood of bad tokens costs a lookup and one append.
        let (headers, bodyPrefix) = switch failure.reason {
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
    private static func parts(_ failure: AuthFailure, retryAfterSeconds: Int) -> (HTTPHeaders, String) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        headers.add(name: "Cache-Control", value: "no-store")
        let message = failure.reason.message
        if let challenge = failure.dpopChallenge {
            addDPoPChallenge(challenge, for: failure, message: message, to: &headers)
        } else {
            addBearerChallenge(for: failure, message: message, to: &headers)
        }
        if failure.status == .serviceUnavailable {
            headers.add(name: "Retry-After", value: String(failure.retryAfterSeconds ?? retryAfterSeconds))
        }
        let bodyPrefix = "{\"error\":\(failure.reason.errorCode.jsonQuoted),\"reason\":\(failure.reason.rawValue.jsonQuoted),"
            + "\"message\":\(message.jsonQuoted),\"request_id\":"
        return (headers, bodyPrefix)
    }

    private static func addBearerChallenge(for failure: AuthFailure, message: String, to headers: inout HTTPHeaders) {
        switch failure.reason {
        case .missingToken:
            headers.add(name: "WWW-Authenticate", value: "Bearer realm=\"gatehouse\"")
        case .insufficientScope:
            let scope = failure.requiredScopes.joined(separator: " ").filter { $0 != "\"" && $0 != "\\" }
            headers.add(name: "WWW-Authenticate", value: "Bearer realm=\"gatehouse\", error=\"insufficient_scope\", scope=\"\(scope)\"")
        case .forbidden, .keysUnavailable, .dpopUnavailable, .introspectionUnavailable, .introspectionBusy:
            break
        default:
            headers.add(
                name: "WWW-Authenticate", value: "Bearer realm=\"gatehouse\", error=\"invalid_token\", error_description=\"\(message)\"")
        }
    }

    /// The algorithms a DPoP proof may be signed with (every asymmetric one Gatehouse verifies).
    package static let dpopAlgorithms = "ES256 ES384 ES512 PS256 PS384 PS512 RS256 RS384 RS512 EdDSA"

    /// RFC 9449 §7.1: the `DPoP` challenge names the error (none for a missing token or a bearer token on a
    /// route that requires DPoP); a `Bearer` challenge follows where bearer tokens are accepted.
    private static func addDPoPChallenge(_ challenge: DPoPChallenge, for failure: AuthFailure, message: String, to headers: inout HTTPHeaders) {
        var value = "DPoP algs=\"\(dpopAlgorithms)\""
        switch failure.reason {
        case .missingToken, .dpopRequired, .forbidden, .keysUnavailable, .dpopUnavailable, .introspectionUnavailable, .introspectionBusy:
            break
        default:
            value += ", error=\"\(failure.reason.errorCode)\", error_description=\"\(message)\""
        }
        if failure.status != .serviceUnavailable && failure.reason != .forbidden {
            headers.add(name: "WWW-Authenticate", value: value)
            if challenge.offersBearer { headers.add(name: "WWW-Authenticate", value: "Bearer realm=\"gatehouse\"") }
        }
        if let nonce = challenge.nonce { headers.add(name: "DPoP-Nonce", value: nonce) }
    }
}
