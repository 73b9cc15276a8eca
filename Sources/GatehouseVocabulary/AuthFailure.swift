/// Why a request was not let through, as written in the response body and the failure log
/// (docs/reference.md §4). The raw value is the machine-readable `reason`.
public enum FailureReason: String, Sendable, Equatable, CaseIterable {
    case missingToken = "missing_token"
    case malformedToken = "malformed_token"
    case unsupportedAlgorithm = "unsupported_algorithm"
    case unknownIssuer = "unknown_issuer"
    case unknownKey = "unknown_key"
    case badSignature = "bad_signature"
    case expired = "expired"
    case notYetValid = "not_yet_valid"
    case wrongAudience = "wrong_audience"
    case invalidClaims = "invalid_claims"
    /// RFC 9068: the JWS `typ` is not one the provider's `token_typ` lists (an ID token used as an access token).
    case wrongTokenType = "wrong_token_type"
    case revoked = "revoked"
    case insufficientScope = "insufficient_scope"
    case forbidden = "forbidden"
    case keysUnavailable = "keys_unavailable"
    /// DPoP (RFC 9449) and certificate-bound (RFC 8705) tokens: docs/reference.md §4.
    case invalidDPoPProof = "invalid_dpop_proof"
    case dpopReplay = "dpop_replay"
    case useDPoPNonce = "use_dpop_nonce"
    case dpopBindingMismatch = "dpop_binding_mismatch"
    case bearerDowngrade = "bearer_downgrade"
    case dpopRequired = "dpop_required"
    case dpopUnavailable = "dpop_unavailable"
    case certificateBindingMismatch = "certificate_binding_mismatch"
    /// Opaque tokens (RFC 7662): the issuer says the token is not active; the issuer cannot answer; too
    /// many introspection calls are in flight for that provider.
    case tokenInactive = "token_inactive"
    case introspectionUnavailable = "introspection_unavailable"
    case introspectionBusy = "introspection_busy"
    /// An MCP server's request from a browser origin it does not allow (DNS rebinding): docs/reference.md §17.5.
    case originNotAllowed = "origin_not_allowed"
    /// An MCP session id bound to another identity (docs/reference.md §17.4): answered 404 as an ended session is.
    case sessionMismatch = "session_mismatch"
    /// A back-channel logout token whose `jti` was seen before (docs/reference.md §7.3).
    case replayed = "replayed"
}

/// A rejected token or request, with what the failure log may say about it.
///
/// `detail` is a human-readable explanation for the security team's log (never the token).
/// The diagnostic fields follow docs/reference.md §8: `iss`, `kid`, `alg` come from the unverified
/// header/payload for diagnosis only; `subject` is set only once the signature verified.
@dynamicMemberLookup
public struct AuthFailure: Error, Sendable, Equatable {
    public var reason: FailureReason

    /// What the failure log may say beside the reason, read and changed as the failure's own properties
    /// (`failure.detail`, `failure.requiredScopes.append(…)`).
    public struct Diagnostics: Sendable, Equatable {
        public var detail: String
        public var provider: String?
        public var issuer: String?
        public var keyID: String?
        public var algorithm: String?
        public var subject: String?
        /// For `insufficient_scope`: the scopes the route requires.
        public var requiredScopes: [String] = []
        /// The `DPoP` challenge this answer carries (a request of the DPoP scheme, a DPoP refusal, or a
        /// route that requires DPoP), with the fresh nonce when one is required.
        public var dpopChallenge: DPoPChallenge?
        /// For a 503: the `Retry-After` this answer carries, when it knows better than the server's default
        /// (an unknown `kid`: when its provider's keys may be refetched).
        public var retryAfterSeconds: Int?
        /// A refusal answered otherwise than a request for the upstream is (a back-channel logout's 400): the status it
        /// got, for the failure log; nil: the reason's (`status`).
        public var answeredStatus: Int?
    }

    /// The diagnostics, held out of line (copy-on-write): a failure is rare, but every verification's result and every
    /// gate verdict is an enum with an `AuthFailure` case, moved on every request's path. Inline, their ~160 bytes made
    /// each of those that large (a memmove per move, ~1 % of a forward's CPU, issue 57).
    @usableFromInline var storage: Storage

    public init(_ reason: FailureReason, _ detail: String) {
        self.reason = reason
        self.storage = Storage(Diagnostics(detail: detail))
    }

    /// Inlinable: at a call site the key path is a literal, and the access compiles to the field's own (a key path
    /// applied at run time cost the 401 path ~9 %).
    @inlinable public subscript<Value>(dynamicMember field: WritableKeyPath<Diagnostics, Value>) -> Value {
        get { storage.diagnostics[keyPath: field] }
        set {
            // In place when this value alone holds the diagnostics, else in a copy of them.
            if !isKnownUniquelyReferenced(&storage) { storage = Storage(storage.diagnostics) }
            storage.diagnostics[keyPath: field] = newValue
        }
    }

    public static func == (lhs: AuthFailure, rhs: AuthFailure) -> Bool {
        lhs.reason == rhs.reason && (lhs.storage === rhs.storage || lhs.storage.diagnostics == rhs.storage.diagnostics)
    }

    // safe: changed only through the subscript's setter, which copies the diagnostics first unless this value is their
    // only holder (copy-on-write), so a storage reachable from two values or two threads is only read.
    @usableFromInline final class Storage: @unchecked Sendable {
        @usableFromInline var diagnostics: Diagnostics

        @usableFromInline init(_ diagnostics: Diagnostics) {
            self.diagnostics = diagnostics
        }
    }
}

/// What the `WWW-Authenticate: DPoP …` challenge of a refusal says (RFC 9449 §7.1, §8).
public struct DPoPChallenge: Sendable, Equatable {
    /// A `Bearer` challenge is offered beside it (the route and provider still accept bearer tokens).
    public var offersBearer: Bool
    /// A fresh `DPoP-Nonce` for the client's next proof.
    public var nonce: String?

    package init(offersBearer: Bool, nonce: String? = nil) {
        self.offersBearer = offersBearer
        self.nonce = nonce
    }
}
