import Crypto
import Foundation
import GatehouseSyntax
package import GatehouseConfig
package import GatehouseTokens

/// Signs the identity assertion of `[assertion]` (docs/reference.md §15) and publishes its keys. One per
/// configuration: a reload makes a new one, with the key files read again.
///
/// Signing is not per request: the assertion of a verified token is kept in the token's `AssertionSlot` and
/// signed again when half its lifetime has passed.
package final class AssertionSigner: Sendable {
    package let settings: AssertionSettings
    /// The JWKS: the signing key's public half, then the published keys.
    package let jwks: String
    /// A strong validator of `jwks` (its SHA-256): equal on every replica with the same keys.
    let jwksETag: String
    static let jwksMaxAge = 300
    /// The protected header, encoded once.
    private let encodedHeader: String
    private let lifetime: Int64
    /// What an assertion's content depends on (key, issuer, audience, lifetime, claims), as 64 bits: a reload that
    /// changes none of them keeps every assertion kept so far; one that swaps the signing key signs again at once.
    package let generation: UInt64
    private let onSigned: @Sendable (_ succeeded: Bool) -> Void

    package init(_ settings: AssertionSettings, onSigned: @escaping @Sendable (_ succeeded: Bool) -> Void = { _ in }) {
        self.settings = settings
        self.onSigned = onSigned
        let identity = [settings.signingKey.keyID, settings.issuer, settings.audience, String(settings.lifetime.components.seconds)]
            + settings.claims
        generation = SHA256.hash(data: Array(identity.joined(separator: "\u{0}").utf8)).withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
        lifetime = max(1, settings.lifetime.components.seconds)
        let keys = ([settings.signingKey] + settings.publishedKeys).map { JSONValue.object($0.jwk) }
        jwks = JSONValue.object(["keys": .array(keys)]).compactJSON
        jwksETag = "\"" + Base64URL.encode(SHA256.hash(data: Array(jwks.utf8)).prefix(18)) + "\""
        let header: JSONValue = .object([
            "alg": .string(settings.signingKey.algorithm), "kid": .string(settings.signingKey.keyID), "typ": .string("JWT"),
        ])
        encodedHeader = Base64URL.encode(header.compactJSON.utf8)
    }

    /// The assertion for this identity now: the one the identity keeps while fresh, else a new one. nil only if
    /// the signature failed (counted); the request then goes without, and an upstream that checks refuses it.
    package func assertion(for identity: VerifiedIdentity, now: Int64) -> String? {
        if let kept = identity.signedAssertion, kept.signer == generation, now < kept.refreshAt,
           carriesCurrentClaims(kept, identity) {
            return kept.value
        }
        guard let signed = sign(identity, now: now) else { return nil }
        identity.keep(signed)
        return signed.value
    }

    private func carriesCurrentClaims(_ kept: SignedAssertion, _ identity: VerifiedIdentity) -> Bool {
        var index = 0
        for name in settings.claims {
            if identity.claim(name) != kept.copied[index] { return false }
            index += 1
        }
        return true
    }

    private func sign(_ identity: VerifiedIdentity, now: Int64) -> SignedAssertion? {
        let copied = settings.claims.map { identity.claim($0) }
        let expiry = min(now + lifetime, identity.expiry)
        // Written member by member (no dictionary to build and sort): this runs once per new token.
        var payload = AssertionPayload()
        payload.add("iss", .string(settings.issuer))
        payload.add("aud", .string(settings.audience))
        if let subject = identity.claim("sub") { payload.add("sub", subject) }
        payload.add("iat", .number(String(now)))
        payload.add("exp", .number(String(expiry)))
        payload.add("jti", .string(Self.newID()))
        payload.add("provider", .string(identity.providerName))
        if let issuer = identity.claim("iss") { payload.add("token_iss", issuer) }
        // The members whose binding Gatehouse proves (SenderConstraints): the DPoP key or the client certificate.
        if let confirmation = identity.claim("cnf")?.objectValue {
            let proven = confirmation.filter { $0.key == "jkt" || $0.key == "x5t#S256" }
            if !proven.isEmpty { payload.add("cnf", .object(proven)) }
        }
        for (name, value) in zip(settings.claims, copied) { if let value { payload.add(name, value) } }
        let input = encodedHeader + "." + Base64URL.encode(payload.finished())
        guard let signature = try? settings.signingKey.sign(Array(input.utf8)) else {
            onSigned(false)
            return nil
        }
        onSigned(true)
        return SignedAssertion(
            value: input + "." + Base64URL.encode(signature), signer: generation,
            refreshAt: expiry == now + lifetime ? now + max(1, lifetime / 2) : .max, copied: copied)
    }

    /// 128 random bits from BoringSSL's generator (no system call per assertion): the assertion's `jti`.
    private static func newID() -> String {
        SymmetricKey(size: .bits128).withUnsafeBytes { Base64URL.encode($0) }
    }
}

/// The claims of one assertion as compact JSON, in the order they are added (names are distinct by configuration).
private struct AssertionPayload {
    private var bytes: [UInt8] = [UInt8(ascii: "{")]

    init() {
        bytes.reserveCapacity(512)
    }

    mutating func add(_ name: String, _ value: JSONValue) {
        if bytes.count > 1 { bytes.append(UInt8(ascii: ",")) }
        JSONValue.string(name).appendCompactJSON(to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        value.appendCompactJSON(to: &bytes)
    }

    func finished() -> [UInt8] { bytes + [UInt8(ascii: "}")] }
}
