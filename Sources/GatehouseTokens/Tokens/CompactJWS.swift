public import GatehouseSyntax
public import GatehouseVocabulary

/// A compact-serialized JWS (RFC 7515 §7.1) carrying a JWT, parsed strictly and not yet verified.
///
/// Parsing never looks at keys and never trusts the header beyond choosing among the algorithms
/// Gatehouse supports: `jwk`, `jku`, `x5u` and `x5c` are ignored, `crit` and `b64` are refused
/// (we implement no extensions), and the algorithm must be one of `JWSAlgorithm` spelled exactly.
public struct CompactJWS: Sendable {
    /// The header's `alg`, one of the supported asymmetric algorithms.
    public let algorithm: JWSAlgorithm
    /// The header's `kid`, a non-empty string when present.
    public let keyID: String?
    /// Every header member, as parsed (duplicates were rejected).
    public let header: [String: JSONValue]
    /// The payload's members, unverified until a key has checked `signature`: read and checked as `StrictJSON` reads
    /// a document, each value made when it is looked up (a token's verification reads a few of them).
    public let claimSet: LazyJSONObject
    /// Every member of the payload, made now (`claimSet` makes only what is looked up).
    public var claims: [String: JSONValue] { claimSet.dictionary }
    /// ASCII bytes of `<header>.<payload>`, the input the signature covers: a slice of the token's bytes.
    public let signingInput: ArraySlice<UInt8>
    /// The decoded signature bytes.
    public let signature: [UInt8]
    /// The payload segment as received (base64url, no padding): a slice of the token's bytes.
    public let encodedPayload: ArraySlice<UInt8>

    /// Parses a compact JWS whose payload is a JWT claims object.
    ///
    /// - Parameters:
    ///   - token: The token as received, without the `Bearer ` prefix.
    ///   - maxBytes: Tokens longer than this are refused before anything else is looked at.
    /// - Throws: `AuthFailure` with reason `malformed_token`, `unsupported_algorithm` or `bad_signature`,
    ///   carrying `algorithm`, `keyID` and `issuer` (each at most 256 bytes) once they are known.
    public static func parse(_ token: Substring, maxBytes: Int) throws(AuthFailure) -> CompactJWS {
        try parse(token, maxBytes: maxBytes, payload: .claims)
    }

    /// `parse(_:maxBytes:)`, taking a header segment seen before from `headers` instead of decoding it
    /// again, and leaving a new one there.
    package static func parse(_ token: Substring, maxBytes: Int, headers: JWSHeaderMemo) throws(AuthFailure) -> CompactJWS {
        try parse(token, maxBytes: maxBytes, payload: .claims, headers: headers)
    }

    /// `parse(_:maxBytes:headers:)` of a token's bytes already copied (`TokenKey.tokenBytes`): the signing input and the
    /// payload are slices of them, not copies.
    package static func parse(bytes: [UInt8], maxBytes: Int, headers: JWSHeaderMemo) throws(AuthFailure) -> CompactJWS {
        try parse(bytes: bytes, maxBytes: maxBytes, payload: .claims, headers: headers)
    }

    /// What the payload must be. JWTs need a claims object; `opaque` takes any payload, even an empty
    /// one, as plain RFC 7515 allows, and exists so generic JWS test vectors can reach the crypto.
    package enum PayloadRule {
        case claims
        case opaque
    }

    package static func parse(
        _ token: Substring, maxBytes: Int, payload rule: PayloadRule, headers: JWSHeaderMemo? = nil
    ) throws(AuthFailure) -> CompactJWS {
        // O(1) for native strings; nothing else is read (or copied) before this check.
        try checkSize(token.utf8.count, maxBytes: maxBytes)
        return try parse(bytes: token.utf8Bytes, maxBytes: maxBytes, payload: rule, headers: headers)
    }

    package static func parse(
        bytes: [UInt8], maxBytes: Int, payload rule: PayloadRule, headers: JWSHeaderMemo? = nil
    ) throws(AuthFailure) -> CompactJWS {
        try checkSize(bytes.count, maxBytes: maxBytes)
        return try bytes.withUnsafeBufferPointer { (buffer) throws(AuthFailure) in
            try parse(buffer: buffer, bytes: bytes, rule: rule, headers: headers)
        }
    }

    private static func checkSize(_ size: Int, maxBytes: Int) throws(AuthFailure) {
        guard size <= maxBytes else {
            throw AuthFailure(.malformedToken, "token is \(size) bytes, more than the limit of \(maxBytes)")
        }
    }

    private static func parse(
        buffer: UnsafeBufferPointer<UInt8>, bytes: [UInt8], rule: PayloadRule, headers: JWSHeaderMemo?
    ) throws(AuthFailure) -> CompactJWS {
        guard !buffer.isEmpty else { throw AuthFailure(.malformedToken, "token is empty") }
        if buffer[0] == UInt8(ascii: "{") {
            throw AuthFailure(.malformedToken, "JWS JSON serialization is not accepted")
        }

        // Find the separators, giving up at the fifth: a token of 40 000 dots costs no more than one of six.
        var firstDot = -1
        var secondDot = -1
        var dotCount = 0
        for index in buffer.indices where buffer[index] == UInt8(ascii: ".") {
            if dotCount == 0 { firstDot = index } else if dotCount == 1 { secondDot = index }
            dotCount += 1
            if dotCount == 5 { break }
        }
        // One dot: `header.payload` with the signature segment cut off. Judged like an empty signature
        // segment once the header has spoken, so `alg: none` written without its final dot is still `none`.
        let signatureMissing = dotCount == 1
        switch dotCount {
        case 1: secondDot = buffer.count
        case 2: break
        case 4: throw AuthFailure(.malformedToken, "JWE is not accepted")
        case 5: throw AuthFailure(.malformedToken, "expected 3 segments, found more than 5")
        default: throw AuthFailure(.malformedToken, "expected 3 segments, found \(dotCount + 1)")
        }

        // The header first and strictly: it names the algorithm, and the algorithm names the attack.
        // `alg: none` or HS256 is refused as `unsupported_algorithm` whatever the payload and signature
        // segments hold (empty, missing, garbage), so the failure log counts the attack as what it is.
        let header: [String: JSONValue]
        let headerSegment = UnsafeBufferPointer(rebasing: buffer[0..<firstDot])
        do {
            if let known = headers?.header(for: headerSegment) {
                header = known
            } else {
                header = try headerObject(headerSegment)
                headers?.remember(header, for: headerSegment)
            }
        } catch where signatureMissing {
            // Two segments and no JWS header: an opaque token (`ya29.…`) or a fragment, not a stripped JWS.
            throw AuthFailure(.malformedToken, "expected 3 segments, found 2")
        }
        let algValue = header["alg"]
        let kidValue = header["kid"]
        var diagnostics = Diagnostics()
        diagnostics.algorithm = algValue?.stringValue
        diagnostics.keyID = kidValue?.stringValue

        let payloadSegment = UnsafeBufferPointer(rebasing: buffer[(firstDot + 1)..<secondDot])
        let payload = payloadClaims(payloadSegment, rule: rule, diagnostics: diagnostics)
        // The issuer is diagnosis only: taken from a payload that parsed, whatever else fails.
        diagnostics.payload = try? payload.get()

        let algorithm = try checkAlgorithm(algValue, diagnostics: diagnostics)
        let keyID = try checkHeaderMembers(header, kid: kidValue, diagnostics: diagnostics)
        let claims = try payload.get()

        // A supported algorithm without a signature is signature stripping, not a parsing accident.
        if signatureMissing { throw diagnostics.failure(.badSignature, "signature segment missing") }
        let signatureSegment = UnsafeBufferPointer(rebasing: buffer[(secondDot + 1)...])
        guard !signatureSegment.isEmpty else { throw diagnostics.failure(.badSignature, "empty signature segment") }
        guard let signature = Base64URL.decode(buffer: signatureSegment) else {
            throw diagnostics.failure(.malformedToken, "signature is not canonical base64url")
        }
        if let expected = algorithm.signatureByteCount, signature.count != expected {
            throw diagnostics.failure(.badSignature, "\(algorithm.rawValue) signature must be \(expected) bytes, got \(signature.count)")
        }

        return CompactJWS(
            algorithm: algorithm,
            keyID: keyID,
            header: header,
            claimSet: claims,
            signingInput: bytes[0..<secondDot],
            signature: signature,
            encodedPayload: bytes[(firstDot + 1)..<secondDot]
        )
    }

    /// The header's members, read in one pass (`StrictJSONObject`).
    private static func headerObject(_ segment: UnsafeBufferPointer<UInt8>) throws(AuthFailure) -> [String: JSONValue] {
        guard !segment.isEmpty else { throw AuthFailure(.malformedToken, "empty header segment") }
        guard let bytes = Base64URL.decode(buffer: segment) else {
            throw AuthFailure(.malformedToken, "header is not canonical base64url")
        }
        let members = bytes.withUnsafeBufferPointer { bytes in
            Result { () throws(StrictJSONError) in try StrictJSONObject.members(of: bytes) }
        }
        switch members {
        case .failure(let error): throw AuthFailure(.malformedToken, "header is not valid JSON: \(error)")
        case .success(nil): throw AuthFailure(.malformedToken, "header is not a JSON object")
        case .success(let members?): return members
        }
    }

    /// The payload segment decoded and parsed as the rule asks; a failure is kept, not thrown, so the
    /// header's algorithm is judged first. Decoded into the object's own storage: its values are made from these
    /// bytes when looked up.
    private static func payloadClaims(
        _ segment: UnsafeBufferPointer<UInt8>, rule: PayloadRule, diagnostics: Diagnostics
    ) -> Result<LazyJSONObject, AuthFailure> {
        if rule == .claims, segment.isEmpty { return .failure(diagnostics.failure(.malformedToken, "empty payload segment")) }
        guard let bytes = Base64URL.decode(buffer: segment) else {
            return .failure(diagnostics.failure(.malformedToken, "payload is not canonical base64url"))
        }
        let object = Result { () throws(StrictJSONError) in try LazyJSONObject.read(bytes) }
        switch (rule, object) {
        case (.opaque, .success(let object?)): return .success(object)
        case (.opaque, _): return .success(.empty)
        case (.claims, .failure(let error)): return .failure(diagnostics.failure(.malformedToken, "payload is not valid JSON: \(error)"))
        case (.claims, .success(nil)): return .failure(diagnostics.failure(.malformedToken, "payload is not a JSON object"))
        case (.claims, .success(let object?)): return .success(object)
        }
    }

    private static func checkAlgorithm(_ value: JSONValue?, diagnostics: Diagnostics) throws(AuthFailure) -> JWSAlgorithm {
        guard let value else { throw diagnostics.failure(.unsupportedAlgorithm, "alg missing") }
        guard case .string(let name) = value else { throw diagnostics.failure(.unsupportedAlgorithm, "alg is not a string") }
        // Exact, case-sensitive match (RFC 7515 §4.1.1): "rs256" or "RS256 " is not RS256.
        if let algorithm = JWSAlgorithm(rawValue: name) { return algorithm }
        if name.lowercased() == "none" {
            throw diagnostics.failure(.unsupportedAlgorithm, "unsecured JWS (alg none) is never accepted")
        }
        if ["HS256", "HS384", "HS512"].contains(name) {
            throw diagnostics.failure(.unsupportedAlgorithm, "HMAC algorithms are never accepted")
        }
        throw diagnostics.failure(.unsupportedAlgorithm, "alg is not a supported asymmetric JWS algorithm")
    }

    /// Checks `kid`, `crit`, `b64`, `cty` and `typ`, and returns the key ID.
    private static func checkHeaderMembers(
        _ header: [String: JSONValue], kid: JSONValue?, diagnostics: Diagnostics
    ) throws(AuthFailure) -> String? {
        var keyID: String?
        if let value = kid {
            guard case .string(let kid) = value else { throw diagnostics.failure(.malformedToken, "kid is not a string") }
            guard !kid.isEmpty else { throw diagnostics.failure(.malformedToken, "kid is empty") }
            keyID = kid
        }
        // RFC 7515 §4.1.11: a recipient must reject critical extensions it does not understand; we understand none.
        if header["crit"] != nil { throw diagnostics.failure(.malformedToken, "crit header is not accepted") }
        // RFC 7797 unencoded payloads change what the signature covers.
        if header["b64"] != nil { throw diagnostics.failure(.malformedToken, "b64 header is not accepted") }
        if let value = header["cty"] {
            guard case .string(let contentType) = value else { throw diagnostics.failure(.malformedToken, "cty is not a string") }
            // "JWT" and its full media type name both announce a nested token (RFC 7519 §5.2).
            let lowered = contentType.lowercased()
            if lowered == "jwt" || lowered == "application/jwt" {
                throw diagnostics.failure(.malformedToken, "nested JWT (cty JWT) is not accepted")
            }
        }
        if let value = header["typ"], value.stringValue == nil {
            throw diagnostics.failure(.malformedToken, "typ is not a string")
        }
        return keyID
    }
}

extension JWSAlgorithm {
    /// The fixed signature length for algorithms that have one (JWA's `r || s` and Ed25519 forms).
    /// RSA signatures are as long as the key's modulus, which the key checks.
    package var signatureByteCount: Int? {
        switch self {
        case .es256: 64
        case .es384: 96
        case .es512: 132
        case .edDSA: 64
        case .rs256, .rs384, .rs512, .ps256, .ps384, .ps512: nil
        }
    }
}

/// The unverified header/payload fields a failure may carry for diagnosis (docs/reference.md §8).
private struct Diagnostics {
    static let fieldLimit = 256

    var algorithm: String?
    var keyID: String?
    /// The payload, once it parsed: its `iss` is read only for a failure.
    var payload: LazyJSONObject?

    func failure(_ reason: FailureReason, _ detail: String) -> AuthFailure {
        var failure = AuthFailure(reason, detail)
        failure.algorithm = algorithm.map { LogText.truncated($0, maxBytes: Self.fieldLimit) }
        failure.keyID = keyID.map { LogText.truncated($0, maxBytes: Self.fieldLimit) }
        failure.issuer = payload?["iss"]?.stringValue.map { LogText.truncated($0, maxBytes: Self.fieldLimit) }
        return failure
    }
}
