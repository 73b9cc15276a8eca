package import GatehouseSyntax

/// The key a sign-out revokes a token under: its provider's name and `jti` when it has one (providers
/// do not share `jti` spaces), else the SHA-256 of the whole token, in hex.
package enum TokenRevocationKey {
    /// - Parameter tokenDigest: the token's SHA-256 (the verifier has it already).
    package static func make(provider: String, claims: [String: JSONValue], tokenDigest: [UInt8]) -> String {
        if let jti = claims["jti"]?.stringValue, !jti.isEmpty { return "jti:" + provider + ":" + jti }
        let prefix = "sha256:".utf8
        return String(unsafeUninitializedCapacity: prefix.count + 2 * tokenDigest.count) { bytes in
            var index = 0
            for byte in prefix {
                bytes[index] = byte
                index += 1
            }
            for byte in tokenDigest {
                bytes[index] = hexDigits[Int(byte >> 4)]
                bytes[index + 1] = hexDigits[Int(byte & 0xF)]
                index += 2
            }
            return index
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)
}
