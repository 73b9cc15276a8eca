import GatehouseSyntax
public import GatehouseVocabulary

/// The usable signature keys of a JWK set document (RFC 7517 §5), and why the others were left out.
///
/// One bad key never spoils the set: keys that are symmetric, private, for encryption, too weak,
/// malformed or of an unsupported type are skipped with a reason and the rest still load.
public struct JWKSet: Sendable {
    /// The keys that may verify tokens.
    public let keys: [VerificationKey]
    /// The keys that were left out, in document order of the checks that dropped them.
    public let skipped: [SkippedKey]

    /// Parses a JWK set.
    ///
    /// - Parameters:
    ///   - bytes: The document, e.g. a provider's `jwks_uri` response body.
    ///   - allowedAlgorithms: The algorithms the provider is configured to accept. A key with `alg`
    ///     may verify exactly that algorithm (and is skipped if it is not allowed); a key without `alg`
    ///     may verify every allowed algorithm its type supports.
    /// - Throws: `JWKSetError` only when the document as a whole is unusable (not strict JSON, not an
    ///   object with a `keys` array).
    public static func parse(_ bytes: some Collection<UInt8>, allowedAlgorithms: Set<JWSAlgorithm>) throws(JWKSetError) -> JWKSet {
        let document: JSONValue
        do {
            document = try StrictJSON.parse(bytes)
        } catch {
            throw .invalidJSON(error)
        }
        guard case .object(let members) = document else { throw .notAKeySet("the document is not a JSON object") }
        guard case .array(let entries)? = members["keys"] else { throw .notAKeySet("keys is missing or not an array") }

        var decoded: [JWKDecoder.Outcome] = []
        decoded.reserveCapacity(entries.count)
        var kidCounts: [String: Int] = [:]
        for entry in entries {
            let result = JWKDecoder.decode(entry, allowedAlgorithms: allowedAlgorithms)
            if case .key(let key) = result, let kid = key.keyID { kidCounts[kid, default: 0] += 1 }
            decoded.append(result)
        }

        var keys: [VerificationKey] = []
        var skipped: [SkippedKey] = []
        for result in decoded {
            switch result {
            case .key(let key):
                // Two usable keys under one kid make the lookup ambiguous; using either would be a guess.
                if let kid = key.keyID, let count = kidCounts[kid], count > 1 {
                    skipped.append(SkippedKey(keyID: kid, reason: "duplicate kid: \(count) keys share it, so none is used"))
                } else {
                    keys.append(key)
                }
            case .skipped(let skip):
                skipped.append(skip)
            }
        }
        return JWKSet(keys: keys, skipped: skipped)
    }

    /// Every `kid` the document lists, of keys loaded or skipped: what the provider still publishes.
    var listedKeyIDs: Set<String> {
        Set(keys.compactMap(\.keyID)).union(skipped.compactMap(\.keyID))
    }

    /// The keys that may verify a token with this `kid` and `alg`.
    ///
    /// With a key ID: the key with exactly that `kid` if it may verify `algorithm`. Without one: the
    /// only key that may verify `algorithm`, or nothing when several could (never a guess, never a
    /// default key).
    /// A slice of `keys`, so a lookup allocates nothing.
    public func candidates(keyID: String?, algorithm: JWSAlgorithm) -> ArraySlice<VerificationKey> {
        if let keyID {
            // Byte comparison: a kid is an opaque lookup key, not text to be normalized. Kids are unique in `keys`.
            guard let index = keys.firstIndex(where: { $0.keyID?.utf8.elementsEqual(keyID.utf8) ?? false }),
                  keys[index].algorithms.contains(algorithm) else { return [] }
            return keys[index...index]
        }
        guard let index = keys.firstIndex(where: { $0.algorithms.contains(algorithm) }),
              !keys[(index + 1)...].contains(where: { $0.algorithms.contains(algorithm) }) else { return [] }
        return keys[index...index]
    }
}

/// A key of a JWK set that was not loaded, and why.
public struct SkippedKey: Sendable, Equatable {
    /// The key's `kid` when it had a string one.
    public let keyID: String?
    /// Why the key was skipped, for the operational log.
    public let reason: String

    /// A skipped key with its `kid` (if any) and why it was skipped.
    public init(keyID: String?, reason: String) {
        self.keyID = keyID
        self.reason = reason
    }
}
