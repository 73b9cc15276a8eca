/// A token as a dictionary key: its exact bytes (never a part of it: a reused signature with
/// another payload must not match), hashed once as bytes rather than as Unicode text.
struct TokenKey: Hashable, Sendable {
    let bytes: [UInt8]
    /// The bytes' hash, computed once: a lookup and an insert, and every probe, reuse it.
    private let digest: Int

    init(_ token: Substring) {
        bytes = token.utf8Bytes
        var hasher = Hasher()
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
        digest = hasher.finalize()
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(digest)
    }

    static func == (lhs: TokenKey, rhs: TokenKey) -> Bool {
        lhs.digest == rhs.digest && lhs.bytes == rhs.bytes
    }
}

/// A bounded map from tokens to what was learnt about them, in two generations: inserts go to
/// the current one; when it holds half the capacity it becomes the previous one and the old
/// previous is dropped whole. A hit in the previous generation moves the entry forward, so
/// tokens in use survive and bounding costs O(1) per insert (no scan, no rehash of survivors).
/// Not synchronized: the owner holds its lock around every call.
struct TokenKeyedGenerations<Value: Sendable>: Sendable {
    private var current: [TokenKey: Value] = [:]
    private var previous: [TokenKey: Value] = [:]
    private let generationCapacity: Int

    /// At most `capacity` entries (rounded up to an even number), at least 2.
    init(capacity: Int) {
        generationCapacity = max(1, (capacity + 1) / 2)
    }

    var count: Int { current.count + previous.count }

    mutating func value(for key: TokenKey) -> Value? {
        if let value = current[key] { return value }
        guard let value = previous.removeValue(forKey: key) else { return nil }
        insert(value, for: key)
        return value
    }

    mutating func insert(_ value: Value, for key: TokenKey) {
        if current.count >= generationCapacity, current[key] == nil {
            previous = current
            current = [:]
            current.reserveCapacity(generationCapacity)
        }
        current[key] = value
    }

    mutating func removeAll() {
        current = [:]
        previous = [:]
    }
}
