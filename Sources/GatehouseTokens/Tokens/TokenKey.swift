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

/// A bounded map from tokens to what was learnt about them, in two generations: inserts go to
/// the current one; when it holds half the capacity it becomes the previous one and the old
/// previous is dropped whole. A hit in the previous generation moves the entry forward, so
/// tokens in use survive and bounding costs O(1) per insert (no scan, no rehash of survivors).
/// Not synchronized: the owner holds its lock around every call.
package struct TokenKeyedGenerations<Value: Sendable>: Sendable {
    private var current: [TokenKey: Value] = [:]
    private var previous: [TokenKey: Value] = [:]
    private let generationCapacity: Int

    /// At most `capacity` entries (rounded up to an even number), at least 2.
    package init(capacity: Int) {
        generationCapacity = max(1, (capacity + 1) / 2)
    }

    package var count: Int { current.count + previous.count }

    package mutating func value(for key: TokenKey) -> Value? {
        if let value = current[key] { return value }
        guard let value = previous.removeValue(forKey: key) else { return nil }
        insert(value, for: key)
        return value
    }

    package mutating func insert(_ value: Value, for key: TokenKey) {
        if current.count >= generationCapacity, current[key] == nil {
            previous = current
            current = [:]
            current.reserveCapacity(generationCapacity)
        }
        current[key] = value
    }
}
