import CPreparedCrypto
package import GatehouseVocabulary

/// An RSA public key prepared once for every signature it will check: its modulus, exponent and
/// Montgomery context made when the JWK is loaded (`CPreparedCrypto`, on OpenSSL's numbers), and the
/// numbers a check works in kept per thread, so a verification sets up and allocates nothing.
/// PKCS #1 v1.5 is checked by encoding the expected block and comparing it whole; PSS follows
/// RFC 8017 §9.1.2 with MGF1 and a salt as long as the digest (RFC 7518 §3.5).
package final class PreparedRSAKey: @unchecked Sendable {
    // @unchecked: the C key is only read after `gatehouse_rsa_key_new` made it (rsa_verify.c), by any
    // thread at once, and freed in deinit, when no one can hold it any more.
    private let key: OpaquePointer
    /// The modulus's size in bits, e.g. 2048.
    let modulusBits: Int

    /// nil when the numbers make no usable key: an even modulus, one over 16 384 bits, an exponent
    /// of zero or over 33 bits (BoringSSL's bound, which swift-crypto held Gatehouse to before).
    package init?(modulus: [UInt8], exponent: [UInt8]) {
        guard let key = gatehouse_rsa_key_new(modulus, modulus.count, exponent, exponent.count) else { return nil }
        self.key = key
        self.modulusBits = Int(gatehouse_rsa_key_bits(key))
    }

    deinit { gatehouse_rsa_key_free(key) }

    /// Whether `signature` is an `algorithm` signature of `message` (RS* and PS* only; false for the rest).
    package func isValidSignature(_ signature: [UInt8], for message: ArraySlice<UInt8>, algorithm: JWSAlgorithm) -> Bool {
        let verify: (OpaquePointer, gatehouse_digest, UnsafePointer<UInt8>?, Int, UnsafePointer<UInt8>?, Int) -> Int32
        let digest: gatehouse_digest
        switch algorithm {
        case .rs256: (verify, digest) = (gatehouse_rsa_verify_pkcs1, GATEHOUSE_SHA256)
        case .rs384: (verify, digest) = (gatehouse_rsa_verify_pkcs1, GATEHOUSE_SHA384)
        case .rs512: (verify, digest) = (gatehouse_rsa_verify_pkcs1, GATEHOUSE_SHA512)
        case .ps256: (verify, digest) = (gatehouse_rsa_verify_pss, GATEHOUSE_SHA256)
        case .ps384: (verify, digest) = (gatehouse_rsa_verify_pss, GATEHOUSE_SHA384)
        case .ps512: (verify, digest) = (gatehouse_rsa_verify_pss, GATEHOUSE_SHA512)
        case .es256, .es384, .es512, .edDSA: return false
        }
        return message.withUnsafeBufferPointer { message in
            signature.withUnsafeBufferPointer { signature in
                verify(key, digest, message.baseAddress, message.count, signature.baseAddress, signature.count) == 1
            }
        }
    }
}
