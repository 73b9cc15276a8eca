package import NIOCore
import Synchronization
public import GatehouseSyntax

/// A token that passed every check: who, by which provider, with which claims. What does not change once verified is
/// one object every copy shares (a request copies its identity several times: its decision, its admission, the
/// upstream head), so a copy counts one reference instead of one per member.
public struct VerifiedIdentity: Sendable {
    private let core: Core
    /// This request's check verified the signature, or introspected the token (a cache miss); false for a copy taken
    /// from a cache. For its trace.
    package var verifiedNow = false

    /// What a verification works out later and keeps: the revocation key the first time it is asked for, the identity
    /// assertion signed for it (`AssertionSigner`). Inline in the identity's one object: a new token allocates nothing more.
    private struct Memo {
        var revocationKey: String?
        var assertion: SignedAssertion?
        /// The claims as signed, made into a dictionary the first time a reader needs all of them (`claims`), or once
        /// a second string claim had to be allocated to be read: an identity read again and again (a cached token's)
        /// then reads its claims without allocating, and a token seen once never makes the dictionary.
        var claims: [String: JSONValue]?
        /// String claims read from the signed bytes that took an allocation of their own.
        var allocatedReads = 0
        /// The payload segment as a `String`, made the first time it is asked for as one (a reader of `String`s: the
        /// Check's answer, an HTTP/2 upstream's head); the HTTP/1.1 head writes its bytes.
        var encodedPayload: String?
    }

    /// A `String` longer than this many UTF-8 bytes is stored out of line: reading such a claim allocates.
    private static let inlineStringBytes = 15

    /// The claims: as the issuer signed them (each value made when it is read), or a dictionary (a preset's, an
    /// introspection's, an enrichment's).
    package enum Claims: Sendable {
        case signed(LazyJSONObject)
        case members([String: JSONValue])
    }

    /// The payload segment as the issuer signed it: its place in the token's bytes (a verified JWS: nothing copied),
    /// or text (an introspection's, made from its answer).
    package enum EncodedPayload: Sendable {
        case inToken(Range<Int>)
        case text(String)
    }

    private final class Core: Sendable {
        let providerIndex: Int
        let providerName: String
        let claims: Claims
        let encodedPayload: EncodedPayload
        let keyID: String?
        let expiry: Int64
        /// The token's SHA-256 (a key made by `TokenKey.sha256`), for the revocation key; nil when it is made from
        /// `token` (a verified JWS: hashed only if a revocation key is ever asked for).
        let tokenDigest: TokenKey?
        let keysFetchedAt: NIODeadline?
        /// The token's bytes as the verified-token cache keys them (empty when not known): shared, not copied.
        let token: [UInt8]
        /// The identity this one enriches (`with(claims:)`): its memo is the origin's, so the assertion and the
        /// revocation key are those of the verification.
        let origin: Core?
        let memo: Mutex<Memo>

        init(
            providerIndex: Int, providerName: String, claims: Claims, encodedPayload: EncodedPayload, keyID: String?, expiry: Int64,
            tokenDigest: TokenKey?, revocationKey: String?, keysFetchedAt: NIODeadline?, token: [UInt8], origin: Core?
        ) {
            self.providerIndex = providerIndex
            self.providerName = providerName
            self.claims = claims
            self.encodedPayload = encodedPayload
            self.keyID = keyID
            self.expiry = expiry
            self.tokenDigest = tokenDigest
            self.keysFetchedAt = keysFetchedAt
            self.token = token
            self.origin = origin
            self.memo = Mutex(Memo(revocationKey: revocationKey))
        }

        /// `body` given the payload segment's bytes.
        func withEncodedPayload<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
            switch encodedPayload {
            case .inToken(let range):
                return token.withUnsafeBufferPointer { body(UnsafeBufferPointer(rebasing: $0[range.clamped(to: 0..<$0.count)])) }
            case .text(let text):
                return StringBytes.withBytes(of: text, body)
            }
        }

        /// The payload segment as a `String`: made once, and kept.
        var encodedPayloadText: String {
            if case .text(let text) = encodedPayload { return text }
            if let made = memo.withLock({ $0.encodedPayload }) { return made }
            let made = withEncodedPayload { String(decoding: $0, as: UTF8.self) }
            memo.withLock { $0.encodedPayload = made }
            return made
        }

        /// The core whose memo holds this verification's assertion and revocation key.
        var verification: Core { origin ?? self }

        func claim(_ name: String) -> JSONValue? {
            switch claims {
            case .members(let members):
                return members[name]
            case .signed(let object):
                if let made = memo.withLock({ $0.claims }) { return made[name] }
                let value = object[name]
                if case .string(let text)? = value, text.utf8.count > VerifiedIdentity.inlineStringBytes,
                    memo.withLock({ memo in
                        memo.allocatedReads += 1
                        return memo.allocatedReads == 2
                    })
                {
                    let made = object.dictionary
                    memo.withLock { $0.claims = $0.claims ?? made }
                }
                return value
            }
        }

        /// Every claim; the signed ones made into a dictionary once, and kept.
        var allClaims: [String: JSONValue] {
            switch claims {
            case .members(let members):
                return members
            case .signed(let object):
                if let made = memo.withLock({ $0.claims }) { return made }
                let made = object.dictionary
                memo.withLock { $0.claims = made }
                return made
            }
        }
    }

    public var providerIndex: Int { core.providerIndex }
    public var providerName: String { core.providerName }
    /// Every claim (made into a dictionary the first time it is asked for: `claim(_:)` reads one without that).
    public var claims: [String: JSONValue] { core.allClaims }

    /// One claim, made from the token's bytes when the identity holds them as signed.
    public func claim(_ name: String) -> JSONValue? { core.claim(name) }

    /// `body` given the text of the claim `name` as signed, when it is a string written without escapes or a number
    /// (`LazyJSONObject.withPlainText`): nil when the identity does not hold its claims as signed, or the claim is
    /// absent or anything else (read those with `claim(_:)`).
    package func withPlainClaimText<Result>(_ name: String, _ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result? {
        guard case .signed(let object) = core.claims else { return nil }
        return object.withPlainText(name, body)
    }
    /// The payload segment as the issuer signed it: forwarded as `X-Auth-Claims`.
    public var encodedPayload: String { core.encodedPayloadText }
    /// `body` given the payload segment's bytes, without making a `String` of them.
    package func withEncodedPayload<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result { core.withEncodedPayload(body) }
    public var keyID: String? { core.keyID }
    /// `exp` in Unix seconds; a cached entry is never used past it.
    public var expiry: Int64 { core.expiry }
    /// The token's bytes, shared with the verified-token cache's key (empty when the verifier did not give them).
    package var token: [UInt8] { core.token }

    /// The key a sign-out revokes this token under (`TokenRevocationKey`), made from the digest the verifier
    /// computed the first time it is asked for (only while something is revoked, or at a sign-out) and kept.
    /// nil when the identity was made without a digest.
    package var revocationKey: String? {
        let verification = core.verification
        if let kept = verification.memo.withLock({ $0.revocationKey }) { return kept }
        let digest: [UInt8]
        if let tokenDigest = verification.tokenDigest {
            digest = tokenDigest.bytes
        } else if !verification.token.isEmpty {
            digest = TokenKey.sha256Words(of: verification.token).bytes
        } else {
            return nil
        }
        let key = TokenRevocationKey.make(provider: verification.providerName, claims: verification.allClaims, tokenDigest: digest)
        verification.memo.withLock { $0.revocationKey = key }
        return key
    }

    /// When the key set it was verified against was fetched: a cached identity is used only while
    /// that set is still the provider's current one (a key replaced under the same `kid`, or removed,
    /// makes the token verify again).
    package var keysFetchedAt: NIODeadline? { core.keysFetchedAt }

    /// The identity assertion signed for this verification (`AssertionSigner`), kept as long as the identity is.
    package var signedAssertion: SignedAssertion? { core.verification.memo.withLock { $0.assertion } }

    /// Keeps `assertion` for the next requests of this verification.
    package func keep(_ assertion: SignedAssertion) {
        core.verification.memo.withLock { $0.assertion = assertion }
    }

    /// - Parameters:
    ///   - tokenDigest: the token's SHA-256 key, from which the revocation key is made when first needed (without it,
    ///     from `token`'s SHA-256, computed then).
    ///   - revocationKey: the revocation key itself, when the maker has it (it wins over `tokenDigest`).
    ///   - token: the token's bytes as the verified-token cache holds them, shared by a connection's `RecentToken`.
    package init(
        providerIndex: Int, providerName: String, claims: [String: JSONValue], encodedPayload: String, keyID: String?, expiry: Int64,
        tokenDigest: TokenKey? = nil, revocationKey: String? = nil, keysFetchedAt: NIODeadline? = nil, verifiedNow: Bool = false,
        token: [UInt8] = []
    ) {
        self.init(
            providerIndex: providerIndex, providerName: providerName, claimSet: .members(claims), payload: .text(encodedPayload),
            keyID: keyID, expiry: expiry, tokenDigest: tokenDigest, revocationKey: revocationKey, keysFetchedAt: keysFetchedAt,
            verifiedNow: verifiedNow, token: token)
    }

    /// `init(providerIndex:providerName:claims:...)` with the claims as signed (`Claims.signed`) or as a dictionary, and
    /// the payload segment given by its place in `token` (a verified JWS's: no copy of it is made) or as text.
    package init(
        providerIndex: Int, providerName: String, claimSet: Claims, payload: EncodedPayload, keyID: String?, expiry: Int64,
        tokenDigest: TokenKey? = nil, revocationKey: String? = nil, keysFetchedAt: NIODeadline? = nil, verifiedNow: Bool = false,
        token: [UInt8] = []
    ) {
        core = Core(
            providerIndex: providerIndex, providerName: providerName, claims: claimSet, encodedPayload: payload, keyID: keyID,
            expiry: expiry, tokenDigest: tokenDigest, revocationKey: revocationKey, keysFetchedAt: keysFetchedAt, token: token, origin: nil)
        self.verifiedNow = verifiedNow
    }

    private init(core: Core, verifiedNow: Bool) {
        self.core = core
        self.verifiedNow = verifiedNow
    }

    public var subject: String? { claim("sub")?.stringValue }

    /// The same identity presenting other claims (enrichment); the signed payload is unchanged, and the assertion and
    /// revocation key stay the verification's.
    package func with(claims: [String: JSONValue]) -> VerifiedIdentity {
        let origin = core.verification
        let enriched = Core(
            providerIndex: providerIndex, providerName: providerName, claims: .members(claims), encodedPayload: core.encodedPayload,
            keyID: keyID, expiry: expiry, tokenDigest: origin.tokenDigest, revocationKey: nil, keysFetchedAt: keysFetchedAt, token: token,
            origin: origin)
        return VerifiedIdentity(core: enriched, verifiedNow: verifiedNow)
    }
}

/// An identity's claims looked up by name (`claim(_:)`): what the claim checks and a route's requirements read, without
/// making every claim.
extension VerifiedIdentity: JSONMembers {
    public subscript(name: String) -> JSONValue? { claim(name) }
}
