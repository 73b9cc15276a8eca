import CPreparedCrypto
import Crypto

/// A token as a dictionary key: its exact bytes (never a part of it: a reused signature with
/// another payload must not match), hashed once as bytes rather than as Unicode text.
package struct TokenKey: Hashable, Sendable {
    package let bytes: [UInt8]
    /// The bytes' hash, computed once: a lookup and an insert, and every probe, reuse it.
    private let digest: Int

    package init(_ token: Substring) {
        self.init(bytes: token.utf8Bytes)
    }

    private init(bytes: [UInt8]) {
        self.bytes = bytes
        var hasher = Hasher()
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
        digest = hasher.finalize()
    }

    /// Keyed by the token's SHA-256 instead of its bytes: for caches anyone can fill (rejected
    /// tokens), so each entry costs 32 bytes whatever the token's size.
    package static func sha256(of token: Substring) -> TokenKey {
        TokenKey(token).sha256()
    }

    /// This key's bytes by their SHA-256 (`sha256(of:)` for a token already made a key): hashed on
    /// the thread's digest context (CPreparedCrypto), so the digest is the only allocation.
    package func sha256() -> TokenKey {
        let digest = [UInt8](unsafeUninitializedCapacity: 32) { digest, count in
            count = bytes.withUnsafeBufferPointer { Int(gatehouse_hash(GATEHOUSE_SHA256, $0.baseAddress, $0.count, digest.baseAddress)) }
        }
        if digest.count == 32 { return TokenKey(bytes: digest) }
        // OpenSSL could not make this thread's digest context (no memory): swift-crypto hashes instead.
        return TokenKey(bytes: Array(SHA256.hash(data: bytes)))
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(digest)
    }

    package static func == (lhs: TokenKey, rhs: TokenKey) -> Bool {
        lhs.digest == rhs.digest && lhs.bytes == rhs.bytes
    }
}
