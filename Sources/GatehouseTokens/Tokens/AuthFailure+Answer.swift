package import NIOHTTP1
import GatehouseVocabulary

/// What a refusal says of its reason: the status, the error code of the challenge and the message of the body.
extension FailureReason {
    /// The RFC 6750 §3.1 (or RFC 9449 §7.1) error code a challenge names.
    package var errorCode: String {
        switch self {
        case .missingToken, .sessionMismatch: "invalid_request"
        case .insufficientScope: "insufficient_scope"
        case .forbidden, .originNotAllowed: "forbidden"
        case .keysUnavailable, .dpopUnavailable, .introspectionUnavailable, .introspectionBusy: "temporarily_unavailable"
        case .invalidDPoPProof, .dpopReplay: "invalid_dpop_proof"
        case .useDPoPNonce: "use_dpop_nonce"
        default: "invalid_token"
        }
    }

    /// A fixed text (no client data), safe inside a quoted-string.
    package var message: String {
        switch self {
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
        case .originNotAllowed: "Requests from this origin are not allowed."
        case .sessionMismatch: "Session not found."
        case .replayed: "The logout token was already used."
        }
    }
}

extension FailureReason {
    /// The refusals of the sender-constraint step (their answer carries the `DPoP` challenge).
    package var isSenderConstraint: Bool {
        switch self {
        case .invalidDPoPProof, .dpopReplay, .useDPoPNonce, .dpopBindingMismatch, .bearerDowngrade, .dpopRequired, .dpopUnavailable: true
        default: false
        }
    }
}

extension AuthFailure {
    /// The HTTP status this failure is answered with (docs/reference.md §4).
    package var status: HTTPResponseStatus {
        if let answeredStatus = self.answeredStatus { return HTTPResponseStatus(statusCode: answeredStatus) }
        return switch reason {
        case .insufficientScope, .forbidden, .originNotAllowed: .forbidden
        case .sessionMismatch: .notFound
        case .keysUnavailable, .dpopUnavailable, .introspectionUnavailable, .introspectionBusy: .serviceUnavailable
        default: .unauthorized
        }
    }
}
