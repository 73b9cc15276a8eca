import Foundation
import Crypto
import _CryptoExtras
import Testing
@testable import GatehouseTokens
import GatehouseVocabulary
import GatehouseSyntax

/// `PreparedRSAKey`'s padding rules on signatures over hand-built blocks (Resources/rsa, made by its
/// make_vectors.py): the cases Wycheproof's 2048-bit files leave untried, each checked through the JWK
/// decoder and `VerificationKey`, the path a token takes.
struct PreparedRSAKeyTests {
    private struct Case {
        var name: String
        var key: VerificationKey
        var algorithm: JWSAlgorithm
        var message: [UInt8]
        var signature: [UInt8]
        var valid: Bool
    }

    private func cases() throws -> [Case] {
        let url = try #require(Bundle.module.url(forResource: "prepared_rsa_vectors.json", withExtension: nil, subdirectory: "rsa"))
        let document = try StrictJSON.parse(Array(try Data(contentsOf: url)), maxDepth: 8)
        return try (document.objectValue?["cases"]?.arrayValue ?? []).map { value in
            let fields = try #require(value.objectValue)
            let jwk = #"{"kty":"RSA","n":"\#(Base64URL.encode(try hex(fields["n"])))","e":"\#(Base64URL.encode(try hex(fields["e"])))"}"#
            let set = try JWKSet.parse(Array(#"{"keys":[\#(jwk)]}"#.utf8), allowedAlgorithms: [.rs256, .ps256])
            return Case(
                name: try #require(fields["name"]?.stringValue),
                key: try #require(set.keys.first, "key skipped: \(set.skipped)"),
                algorithm: try #require(JWSAlgorithm(rawValue: fields["alg"]?.stringValue ?? "")),
                message: try hex(fields["msg"]),
                signature: try hex(fields["sig"]),
                valid: fields["valid"] == .bool(true))
        }
    }

    private func hex(_ value: JSONValue?) throws -> [UInt8] {
        let text = Array(try #require(value?.stringValue).utf8)
        try #require(text.count % 2 == 0)
        let digits = Array("0123456789abcdef".utf8)
        return try stride(from: 0, to: text.count, by: 2).map { index in
            let high = try #require(digits.firstIndex(of: text[index]))
            let low = try #require(digits.firstIndex(of: text[index + 1]))
            return UInt8(high << 4 | low)
        }
    }

    @Test func everyHandBuiltBlockIsJudgedAsRFC8017Says() throws {
        let all = try cases()
        #expect(all.count == 13)
        #expect(all.contains { $0.valid } && all.contains { !$0.valid })
        for item in all {
            let verified = item.key.isValidSignature(item.signature, for: item.message, algorithm: item.algorithm)
            #expect(verified == item.valid, "\(item.name): \(verified ? "verified" : "refused"), expected \(item.valid ? "verified" : "refused")")
        }
    }

    @Test func aKeyVerifiesOnManyThreadsAtOnce() async throws {
        let valid = try cases().filter(\.valid)
        await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<8 {
                group.addTask { valid.allSatisfy { $0.key.isValidSignature($0.signature, for: $0.message, algorithm: $0.algorithm) } }
            }
            for await allVerified in group { #expect(allVerified) }
        }
    }

    @Test func numbersNoRSAKeyCanHaveAreRefused() {
        let modulus = [UInt8](repeating: 0xC5, count: 256)
        #expect(PreparedRSAKey(modulus: modulus, exponent: [1, 0, 1]) != nil)
        #expect(PreparedRSAKey(modulus: modulus.dropLast() + [0xC4], exponent: [1, 0, 1]) == nil, "an even modulus")
        #expect(PreparedRSAKey(modulus: modulus, exponent: [0]) == nil, "a zero exponent")
        #expect(PreparedRSAKey(modulus: modulus, exponent: [2] + [UInt8](repeating: 0, count: 3) + [1]) == nil, "a 34-bit exponent")
        #expect(PreparedRSAKey(modulus: [UInt8](repeating: 0xC5, count: 2049), exponent: [1, 0, 1]) == nil, "over 16 384 bits")
    }
}

/// Every RSA algorithm and the usual key sizes, signed by swift-crypto (BoringSSL) and checked by the prepared key:
/// two implementations agreeing, where Wycheproof's files here are SHA-256 and 2048 bits only.
struct PreparedRSAKeyAgainstSwiftCryptoTests {
    private static let algorithms: [JWSAlgorithm] = [.rs256, .rs384, .rs512, .ps256, .ps384, .ps512]

    private func sign(_ message: [UInt8], with key: _RSA.Signing.PrivateKey, _ algorithm: JWSAlgorithm) throws -> [UInt8] {
        let padding: _RSA.Signing.Padding = algorithm.rawValue.hasPrefix("PS") ? .PSS : .insecurePKCS1v1_5
        let signature: _RSA.Signing.RSASignature
        switch algorithm {
        case .rs256, .ps256: signature = try key.signature(for: SHA256.hash(data: message), padding: padding)
        case .rs384, .ps384: signature = try key.signature(for: SHA384.hash(data: message), padding: padding)
        default: signature = try key.signature(for: SHA512.hash(data: message), padding: padding)
        }
        return Array(signature.rawRepresentation)
    }

    @Test(arguments: [2048, 3072, 4096])
    func everyAlgorithmVerifiesWhatSwiftCryptoSignedAndNothingElse(bits: Int) throws {
        let privateKey = try _RSA.Signing.PrivateKey(keySize: .init(bitCount: bits))
        let primitives = try privateKey.publicKey.getKeyPrimitives()
        let key = try #require(PreparedRSAKey(modulus: Array(primitives.modulus), exponent: Array(primitives.publicExponent)))
        #expect(key.modulusBits == bits)
        let message = ArraySlice("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1c2VyIn0".utf8)
        for algorithm in Self.algorithms {
            let signature = try sign(Array(message), with: privateKey, algorithm)
            #expect(key.isValidSignature(signature, for: message, algorithm: algorithm), "\(algorithm.rawValue) \(bits)")
            var flipped = signature
            flipped[flipped.count / 2] ^= 0x01
            #expect(!key.isValidSignature(flipped, for: message, algorithm: algorithm), "\(algorithm.rawValue) \(bits): a flipped bit")
            #expect(!key.isValidSignature(signature, for: message + [0x2E], algorithm: algorithm), "\(algorithm.rawValue) \(bits): another message")
            for other in Self.algorithms where other != algorithm {
                #expect(!key.isValidSignature(signature, for: message, algorithm: other), "\(algorithm.rawValue) checked as \(other.rawValue)")
            }
        }
    }
}
