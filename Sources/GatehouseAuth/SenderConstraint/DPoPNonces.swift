import Crypto
import GatehouseSyntax

/// Server-provided DPoP nonces (RFC 9449 §8), stateless: a nonce is the second it was issued and an
/// HMAC-SHA-256 over it with a secret every replica shares, so any replica accepts what another issued
/// and nothing is stored. A nonce is good for `lifetime`; an expired one or one made with another secret
/// gets `use_dpop_nonce` and a fresh one.
package struct DPoPNonces: Sendable {
    private let key: SymmetricKey
    package let lifetime: Int64
    /// How far in the future an issue time may lie: replicas' clocks differ a little.
    private let skew: Int64 = 5

    package init(secret: [UInt8], lifetime: Int64) {
        // Derived rather than used as is, so the secret serves no other HMAC by accident.
        key = SymmetricKey(data: HMAC<SHA256>.authenticationCode(for: Array("gatehouse dpop nonce v1".utf8), using: SymmetricKey(data: secret)))
        self.lifetime = lifetime
    }

    package func issue(now: Int64) -> String {
        let stamp = Self.stampBytes(now)
        return Base64URL.encode(stamp + mac(stamp))
    }

    func isValid(_ nonce: String, now: Int64) -> Bool {
        guard nonce.utf8.count == 28, let bytes = Base64URL.decode(nonce.utf8), bytes.count == 21 else { return false }
        let stamp = Array(bytes[0..<5])
        guard mac(stamp).elementsEqualConstantTime(bytes[5...]) else { return false }
        let issued = stamp.reduce(Int64(0)) { $0 << 8 | Int64($1) }
        return issued <= now + skew && now - issued <= lifetime
    }

    /// The issue second in 5 bytes, big-endian (enough until the year 36812).
    private static func stampBytes(_ now: Int64) -> [UInt8] {
        (0..<5).reversed().map { UInt8(truncatingIfNeeded: now >> (8 * Int64($0))) }
    }

    private func mac(_ stamp: [UInt8]) -> [UInt8] {
        Array(Array(HMAC<SHA256>.authenticationCode(for: stamp, using: key)).prefix(16))
    }
}

extension Collection where Element == UInt8 {
    /// Equal length and bytes, in time independent of where they differ.
    func elementsEqualConstantTime(_ other: some Collection<UInt8>) -> Bool {
        guard count == other.count else { return false }
        var difference: UInt8 = 0
        for (lhs, rhs) in zip(self, other) { difference |= lhs ^ rhs }
        return difference == 0
    }
}
