import Crypto
import _CryptoExtras
import Testing
import GatehouseTokenFixtures
import GatehouseTokens
import GatehouseVocabulary

/// Signature primitives; docs/security.md J13, J14 (J15-18 run against Wycheproof in WycheproofTests).
struct VerificationKeyTests {
    private typealias F = TokenFixtures
    private let input = Array(#"eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ1In0"#.utf8)

    private func key(_ jwk: String) throws -> VerificationKey {
        try #require(try JWKSet.parse(F.keySet([jwk]), allowedAlgorithms: F.allAlgorithms).keys.first)
    }

    @Test func rsaKeysVerifyEachRSAAlgorithmWithItsOwnHashAndPadding() throws {
        let privateKey = try #require(F.rsaKey)
        let verifier = try key(try F.rsaJWK(privateKey.publicKey, kid: "k"))
        #expect(verifier.keyType == "RSA-2048")
        let signatures: [(JWSAlgorithm, [UInt8])] = [
            (.rs256, Array(try privateKey.signature(for: SHA256.hash(data: input), padding: .insecurePKCS1v1_5).rawRepresentation)),
            (.rs384, Array(try privateKey.signature(for: SHA384.hash(data: input), padding: .insecurePKCS1v1_5).rawRepresentation)),
            (.rs512, Array(try privateKey.signature(for: SHA512.hash(data: input), padding: .insecurePKCS1v1_5).rawRepresentation)),
            (.ps256, Array(try privateKey.signature(for: SHA256.hash(data: input), padding: .PSS).rawRepresentation)),
            (.ps384, Array(try privateKey.signature(for: SHA384.hash(data: input), padding: .PSS).rawRepresentation)),
            (.ps512, Array(try privateKey.signature(for: SHA512.hash(data: input), padding: .PSS).rawRepresentation)),
        ]
        for (algorithm, signature) in signatures {
            for (other, _) in signatures {
                #expect(verifier.isValidSignature(signature, for: input, algorithm: other) == (other == algorithm),
                        "\(algorithm.rawValue) signature checked as \(other.rawValue)")
            }
            #expect(!verifier.isValidSignature(signature, for: input + [0x41], algorithm: algorithm))
            #expect(!verifier.isValidSignature(Array(signature.dropLast()), for: input, algorithm: algorithm))
            #expect(!verifier.isValidSignature([0] + signature, for: input, algorithm: algorithm))
        }
    }

    @Test func ecKeysVerifyOnlyRawSignaturesOfTheirCurve() throws {
        let p256 = P256.Signing.PrivateKey()
        let p384 = P384.Signing.PrivateKey()
        let p521 = P521.Signing.PrivateKey()
        let k256 = try key(F.ecJWK(raw: Array(p256.publicKey.rawRepresentation), crv: "P-256", kid: "a"))
        let k384 = try key(F.ecJWK(raw: Array(p384.publicKey.rawRepresentation), crv: "P-384", kid: "b"))
        let k521 = try key(F.ecJWK(raw: Array(p521.publicKey.rawRepresentation), crv: "P-521", kid: "c"))
        let s256 = try p256.signature(for: input)
        let s384 = try p384.signature(for: input)
        let s521 = try p521.signature(for: input)
        #expect(k256.isValidSignature(Array(s256.rawRepresentation), for: input, algorithm: .es256))
        #expect(k384.isValidSignature(Array(s384.rawRepresentation), for: input, algorithm: .es384))
        #expect(k521.isValidSignature(Array(s521.rawRepresentation), for: input, algorithm: .es512))
        #expect(!k256.isValidSignature(Array(s256.rawRepresentation), for: input, algorithm: .es384))
        #expect(!k384.isValidSignature(Array(s384.rawRepresentation), for: input, algorithm: .es256))
        #expect(!k256.isValidSignature(Array(s256.rawRepresentation), for: input + [0], algorithm: .es256))
        // J14: the DER form of a valid signature is refused.
        #expect(!k256.isValidSignature(Array(s256.derRepresentation), for: input, algorithm: .es256))
        #expect(!k384.isValidSignature(Array(s384.derRepresentation), for: input, algorithm: .es384))
        #expect(!k521.isValidSignature(Array(s521.derRepresentation), for: input, algorithm: .es512))
    }

    // J13: CVE-2022-21449 "psychic signatures".
    @Test func psychicSignaturesAreRejected() throws {
        let k256 = try key(F.ecJWK(raw: Array(P256.Signing.PrivateKey().publicKey.rawRepresentation), crv: "P-256", kid: "a"))
        let order: [UInt8] = [
            0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
            0xBC, 0xE6, 0xFA, 0xAD, 0xA7, 0x17, 0x9E, 0x84, 0xF3, 0xB9, 0xCA, 0xC2, 0xFC, 0x63, 0x25, 0x51,
        ]
        let zero = [UInt8](repeating: 0, count: 32)
        let one = [UInt8](repeating: 0, count: 31) + [1]
        for signature in [zero + zero, zero + one, one + zero, order + order, order + one, one + order] {
            #expect(!k256.isValidSignature(signature, for: input, algorithm: .es256))
            #expect(!k256.isValidSignature(signature, for: [], algorithm: .es256))
        }
    }

    @Test func ed25519KeysVerifyEdDSA() throws {
        let privateKey = Curve25519.Signing.PrivateKey()
        let verifier = try key(F.okpJWK(raw: Array(privateKey.publicKey.rawRepresentation), kid: "e"))
        #expect(verifier.keyType == "OKP Ed25519")
        let signature = Array(try privateKey.signature(for: input))
        #expect(verifier.isValidSignature(signature, for: input, algorithm: .edDSA))
        #expect(!verifier.isValidSignature(signature, for: input + [0], algorithm: .edDSA))
        #expect(!verifier.isValidSignature(signature + [0], for: input, algorithm: .edDSA))
        #expect(!verifier.isValidSignature(signature, for: input, algorithm: .es256))
    }

    @Test func aKeyNeverVerifiesAnAlgorithmOutsideItsSet() throws {
        let privateKey = try #require(F.rsaKey)
        let verifier = try key(try F.rsaJWK(privateKey.publicKey, kid: "k", extra: #","alg":"PS256""#))
        let pkcs1 = Array(try privateKey.signature(for: SHA256.hash(data: input), padding: .insecurePKCS1v1_5).rawRepresentation)
        #expect(verifier.algorithms == [.ps256])
        #expect(!verifier.isValidSignature(pkcs1, for: input, algorithm: .rs256))
    }
}
