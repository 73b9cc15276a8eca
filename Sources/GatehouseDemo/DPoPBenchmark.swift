import Crypto
import Foundation
import GatehouseSyntax
import GatehouseTokens
import GatehouseAuth

/// What DPoP adds per request (`gatehouse bench-verify --dpop`): checking one proof (strict parse, the
/// `jwk` loaded, its thumbprint, the ES256 signature), and the replay cache's memory when proofs
/// arrive at a steady rate for as long as each stays in the window.
public enum DPoPBenchmark {
    /// Proofs checked per second on one core, as `DPoPProof.verify` does for every DPoP request.
    public static func proofVerification(seconds: Double = 1) throws -> VerifyBenchmark.Measurement {
        let key = P256.Signing.PrivateKey()
        let raw = Array(key.publicKey.rawRepresentation)
        let jwk = JSONValue.object([
            "kty": .string("EC"), "crv": .string("P-256"),
            "x": .string(Base64URL.encode(raw[0..<32])), "y": .string(Base64URL.encode(raw[32..<64])),
        ])
        let header = JSONValue.object(["typ": .string("dpop+jwt"), "alg": .string("ES256"), "jwk": jwk])
        let claims = JSONValue.object([
            "jti": .string(UUID().uuidString), "htm": .string("GET"), "htu": .string("https://api.example.com/v1/orders"),
            "iat": .number(String(Int64(Date().timeIntervalSince1970))), "ath": .string(String(repeating: "A", count: 43)),
        ])
        let signingInput = Base64URL.encode(Array(header.compactJSON.utf8)) + "." + Base64URL.encode(Array(claims.compactJSON.utf8))
        let proof = signingInput + "." + Base64URL.encode(Array(try key.signature(for: Array(signingInput.utf8)).rawRepresentation))
        var verified = 0
        let deadline = Date().addingTimeInterval(seconds)
        let start = DispatchTime.now().uptimeNanoseconds
        repeat {
            for _ in 0..<50 {
                _ = try DPoPProof.verify(proof[...], maxBytes: 8192)
                verified += 1
            }
        } while Date() < deadline
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        return VerifyBenchmark.Measurement(algorithm: "DPoP proof ES256", keyType: "EC P-256", tokensPerSecond: Double(verified) / elapsed)
    }

    public struct ReplayFootprint: Sendable {
        /// Live entries once the rate has run for longer than the window (steady state).
        public var entries: Int
        /// Growth of the process's resident memory over that time.
        public var residentBytes: Int
    }

    /// Feeds `proofsPerSecond` fresh proofs (`iat` = now, as clients send) per simulated second to a
    /// replay cache, for the window and a little more, then measures what it holds.
    public static func replayFootprint(proofsPerSecond: Int, window: Int64) -> ReplayFootprint {
        let cache = DPoPReplayCache(capacity: Int.max)
        let before = ResidentMemory.bytes()
        let start: Int64 = 1_800_000_000
        var serial = 0
        for second in 0..<(window + 3 * DPoPReplayCache.granularity) {
            let now = start + second
            for _ in 0..<proofsPerSecond {
                serial += 1
                _ = cache.claim(DPoPReplayCache.Key(thumbprint: "bench-key", identifier: String(serial)), expiresAt: now + window, now: now)
            }
        }
        return ReplayFootprint(entries: cache.count, residentBytes: ResidentMemory.bytes() - before)
    }
}
