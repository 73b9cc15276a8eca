import NIOCore
import NIOHTTP1
import GatehouseSyntax
import GatehouseTokens

/// The 401 / 403 / 503 answer of docs/reference.md §4: status, `WWW-Authenticate` (RFC 6750 §3) and a JSON body.
enum AuthErrorResponse {
    static func make(_ failure: AuthFailure, requestID: String, retryAfterSeconds: Int) -> (HTTPResponseStatus, HTTPHeaders, String) {
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
        let message = message(for: failure.reason)
        if let challenge = failure.dpopChallenge {
            addDPoPChallenge(challenge, for: failure, message: message, to: &headers)
        } else {
            addBearerChallenge(for: failure, message: message, to: &headers)
        }
        if failure.status == .serviceUnavailable {
            headers.add(name: "Retry-After", value: String(failure.retryAfterSeconds ?? retryAfterSeconds))
        }
        let bodyPrefix = "{\"error\":\(errorCode(for: failure.reason).jsonQuoted),\"reason\":\(failure.reason.rawValue.jsonQuoted),"
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
    static let dpopAlgorithms = "ES256 ES384 ES512 PS256 PS384 PS512 RS256 RS384 RS512 EdDSA"

    /// RFC 9449 §7.1: the `DPoP` challenge names the error (none for a missing token or a bearer token on a
    /// route that requires DPoP); a `Bearer` challenge follows where bearer tokens are accepted.
    private static func addDPoPChallenge(_ challenge: DPoPChallenge, for failure: AuthFailure, message: String, to headers: inout HTTPHeaders) {
        var value = "DPoP algs=\"\(dpopAlgorithms)\""
        switch failure.reason {
        case .missingToken, .dpopRequired, .forbidden, .keysUnavailable, .dpopUnavailable, .introspectionUnavailable, .introspectionBusy:
            break
        default:
            value += ", error=\"\(errorCode(for: failure.reason))\", error_description=\"\(message)\""
        }
        if failure.status != .serviceUnavailable && failure.reason != .forbidden {
            headers.add(name: "WWW-Authenticate", value: value)
            if challenge.offersBearer { headers.add(name: "WWW-Authenticate", value: "Bearer realm=\"gatehouse\"") }
        }
        if let nonce = challenge.nonce { headers.add(name: "DPoP-Nonce", value: nonce) }
    }

    static func errorCode(for reason: FailureReason) -> String {
        switch reason {
        case .missingToken: "invalid_request"
        case .insufficientScope: "insufficient_scope"
        case .forbidden: "forbidden"
        case .keysUnavailable, .dpopUnavailable, .introspectionUnavailable, .introspectionBusy: "temporarily_unavailable"
        case .invalidDPoPProof, .dpopReplay: "invalid_dpop_proof"
        case .useDPoPNonce: "use_dpop_nonce"
        default: "invalid_token"
        }
    }

    /// Messages are fixed texts (no client data), safe inside a quoted-string.
    static func message(for reason: FailureReason) -> String {
        switch reason {
        case .missingToken: "A bearer token is required."
        case .malformedToken: "The access token is malformed."
        case .unsupportedAlgorithm: "The access token is signed with an algorithm that is not accepted."
        case .unknownIssuer: "The access token was issued by an issuer that is not accepted."
        case .unknownKey: "The access token is signed with an unknown key."
        case .badSignature: "The access token signature is invalid."
        case .expired: "The access token expired."
        case .notYetValid: "The access token is not valid yet."
        case .wrongAudience: "The access token was issued for another audience."
        case .invalidClaims: "The access token claims are not accepted."
        case .wrongTokenType: "The token is not an access token of an accepted type."
        case .revoked: "The access token has been revoked."
        case .insufficientScope: "The access token lacks a required scope."
        case .forbidden: "This identity is not allowed to access this resource."
        case .keysUnavailable: "Authentication service temporarily unavailable. Please try again."
        case .invalidDPoPProof: "The DPoP proof is invalid."
        case .dpopReplay: "The DPoP proof was already used."
        case .useDPoPNonce: "A DPoP proof with the server's nonce is required."
        case .dpopBindingMismatch: "The access token is not bound to the DPoP proof's key."
        case .bearerDowngrade: "A DPoP-bound access token must be presented with the DPoP scheme."
        case .dpopRequired: "A DPoP-bound access token and proof are required."
        case .dpopUnavailable: "The DPoP proof cannot be checked now. Please try again."
        case .certificateBindingMismatch: "The access token is not bound to the client certificate of this connection."
        case .tokenInactive: "The access token is not active."
        case .introspectionUnavailable: "The token issuer cannot be asked about the token now. Please try again."
        case .introspectionBusy: "Too many tokens are being checked with the issuer. Please try again."
        }
    }
}
