import CPreparedCrypto
import Crypto

/// A token as a dictionary key: its exact bytes (never a part of it: a reused signature with
/// another payload must not match), hashed once as bytes rather than as Unicode text; or the
/// token's SHA-256, held inline (no allocation), for the caches anyone can fill.
package struct TokenKey: Hashable, Sendable {
    private enum Storage: Equatable, Sendable {
        case token([UInt8])
        case sha256(SHA256Words)
    }

    private let storage: Storage
    /// The bytes' hash (the process's random seed), computed once: a lookup and an insert, and every probe, reuse it.
    package let digest: Int

    package init(_ token: Substring) {
        self.init(.token(token.utf8Bytes))
    }

    private init(_ storage: Storage) {
        self.storage = storage
        var hasher = Hasher()
        switch storage {
        case .token(let bytes): bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
        case .sha256(let words): hasher.combine(words)
        }
        digest = hasher.finalize()
    }

    /// The key's bytes: the token's own, or its 32-byte digest (copied out of the key).
    package var bytes: [UInt8] {
        switch storage {
        case .token(let bytes): bytes
        case .sha256(let words): words.bytes
        }
    }

    /// The token's bytes as the key holds them (shared, not copied); empty for a digest key.
    package var tokenBytes: [UInt8] {
        if case .token(let bytes) = storage { return bytes }
        return []
    }

    /// Keyed by the token's SHA-256 instead of its bytes: for caches anyone can fill (rejected
    /// tokens), so each entry costs 32 bytes whatever the token's size.
    package static func sha256(of token: Substring) -> TokenKey {
        TokenKey(token).sha256()
    }

    /// This key's bytes by their SHA-256 (`sha256(of:)` for a token already made a key): hashed by
    /// CPreparedCrypto (its context on the stack) into the key itself, so nothing is allocated.
    package func sha256() -> TokenKey {
        TokenKey(.sha256(sha256Words))
    }

    /// The SHA-256 of the key's bytes (a digest key's own words).
    package var sha256Words: SHA256Words {
        switch storage {
        case .token(let bytes): Self.sha256Words(of: bytes)
        case .sha256(let words): words
        }
    }

    package static func sha256Words(of bytes: [UInt8]) -> SHA256Words {
        bytes.withUnsafeBufferPointer { SHA256Words(of: $0) }
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(digest)
    }

    package static func == (lhs: TokenKey, rhs: TokenKey) -> Bool {
        lhs.digest == rhs.digest && lhs.storage == rhs.storage
    }
}

/// A SHA-256 digest as four words, kept inline.
package struct SHA256Words: Hashable, Sendable {
    private var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)

    init(of input: UnsafeBufferPointer<UInt8>) {
        let written = withUnsafeMutableBytes(of: &words) { digest in
            Int(gatehouse_hash(GATEHOUSE_SHA256, input.baseAddress, input.count, digest.baseAddress!.assumingMemoryBound(to: UInt8.self)))  // safe: 32 bytes
        }
        // OpenSSL failed (it cannot for SHA-256 in memory; kept so a failure can never make a zero key): swift-crypto hashes.
        if written != 32 {
            let hashed = SHA256.hash(data: input)
            withUnsafeMutableBytes(of: &words) { digest in hashed.withUnsafeBytes { digest.copyMemory(from: $0) } }
        }
    }

    /// The digest's 32 bytes.
    package var bytes: [UInt8] {
        withUnsafeBytes(of: words) { Array($0) }
    }

    package func hash(into hasher: inout Hasher) {
        withUnsafeBytes(of: words) { hasher.combine(bytes: $0) }
    }

    package static func == (lhs: SHA256Words, rhs: SHA256Words) -> Bool {
        lhs.words == rhs.words
    }
}
