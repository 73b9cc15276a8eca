import Crypto
import Foundation
import _CryptoExtras
import GatehouseSyntax
import GatehouseConfig
import GatehouseTokens
import GatehouseVocabulary

/// The cost of what Gatehouse does for a token it has not verified before: strict parse of the
/// compact JWS, then the signature check, per algorithm (`gatehouse bench-verify`; bench/run.sh
/// compares it with `openssl speed`'s verify rate for the same key types).
public enum VerifyBenchmark {
    public struct Measurement: Sendable {
        public var algorithm: String
        public var keyType: String
        public var tokensPerSecond: Double
        public var microsecondsPerToken: Double { 1_000_000 / tokensPerSecond }
    }

    struct Signer {
        var algorithm: JWSAlgorithm
        var key: VerificationKey
        var sign: ([UInt8]) throws -> [UInt8]
    }

    /// Runs each algorithm for about `seconds`, single-threaded.
    public static func run(seconds: Double = 1) throws -> [Measurement] {
        try signers().map { signer in
            let token = try makeToken(signer)
            var verified = 0
            let deadline = Date().addingTimeInterval(seconds)
            let start = DispatchTime.now().uptimeNanoseconds
            repeat {
                for _ in 0..<50 {
                    let jws = try CompactJWS.parse(token[...], maxBytes: 8192)
                    guard signer.key.isValidSignature(jws.signature, for: jws.signingInput, algorithm: jws.algorithm) else {
                        throw AuthFailure(.badSignature, "benchmark token did not verify")
                    }
                    verified += 1
                }
            } while Date() < deadline
            let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            return Measurement(algorithm: signer.algorithm.rawValue, keyType: signer.key.keyType, tokensPerSecond: Double(verified) / elapsed)
        }
    }

    private static func makeToken(_ signer: Signer) throws -> String {
        let now = Int64(Date().timeIntervalSince1970)
        let header = JSONValue.object(["alg": .string(signer.algorithm.rawValue), "kid": .string("bench"), "typ": .string("JWT")])
        let claims = JSONValue.object([
            "iss": .string("https://issuer.bench"), "aud": .string("bench-api"), "sub": .string("user-1"),
            "iat": .number(String(now)), "exp": .number(String(now + 3600)), "email": .string("user@example.com"),
        ])
        let signingInput = Base64URL.encode(Array(header.compactJSON.utf8)) + "." + Base64URL.encode(Array(claims.compactJSON.utf8))
        return signingInput + "." + Base64URL.encode(try signer.sign(Array(signingInput.utf8)))
    }

    private static func signers() throws -> [Signer] {
        let rsa = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let p256 = P256.Signing.PrivateKey()
        let ed25519 = Curve25519.Signing.PrivateKey()
        let primitives = try rsa.publicKey.getKeyPrimitives()
        guard let prepared = PreparedRSAKey(modulus: Array(primitives.modulus), exponent: Array(primitives.publicExponent)) else {
            throw AuthFailure(.keysUnavailable, "the benchmark's RSA key was refused")
        }
        let rsaKey = VerificationKey(keyID: "bench", algorithms: [.rs256, .ps256], backing: .rsa(prepared))
        return [
            Signer(algorithm: .rs256, key: rsaKey) {
                Array(try rsa.signature(for: SHA256.hash(data: $0), padding: .insecurePKCS1v1_5).rawRepresentation)
            },
            Signer(algorithm: .ps256, key: rsaKey) {
                Array(try rsa.signature(for: SHA256.hash(data: $0), padding: .PSS).rawRepresentation)
            },
            Signer(algorithm: .es256, key: VerificationKey(keyID: "bench", algorithms: [.es256], backing: .p256(p256.publicKey))) {
                Array(try p256.signature(for: $0).rawRepresentation)
            },
            Signer(algorithm: .edDSA, key: VerificationKey(keyID: "bench", algorithms: [.edDSA], backing: .ed25519(ed25519.publicKey))) {
                Array(try ed25519.signature(for: $0))
            },
        ]
    }
}
