import Atomics

/// `X-Request-Id`: a client's own is kept if it is a sane identifier, else one is generated.
package enum RequestID {
    static let maxLength = 128

    package static func acceptOrGenerate(_ presented: String?) -> String {
        if let presented, isAcceptable(presented) { return presented }
        return generate()
    }

    /// 1-128 characters of `A-Z a-z 0-9 - _ . :` (nothing that could break a log or header).
    package static func isAcceptable(_ value: String) -> Bool {
        let utf8 = value.utf8
        guard !utf8.isEmpty, utf8.count <= maxLength else { return false }
        return utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == 0x2D || byte == 0x5F || byte == 0x2E || byte == 0x3A
        }
    }

    /// 32 hex digits: a random per-process prefix and a counter. Unique without a `getrandom`
    /// system call per request (request ids are correlation handles, not secrets).
    static func generate() -> String {
        let counter = counter.loadThenWrappingIncrement(ordering: .relaxed)
        return String(unsafeUninitializedCapacity: 32) { bytes in
            writeHex(processPrefix, into: bytes, at: 0)
            writeHex(counter, into: bytes, at: 16)
            return 32
        }
    }

    private static let processPrefix = UInt64.random(in: .min ... .max)
    private static let counter = ManagedAtomic<UInt64>(UInt64.random(in: 0 ... UInt64(UInt32.max)))

    /// 16 lower-case hex digits, leading zeros kept.
    private static func writeHex(_ value: UInt64, into bytes: UnsafeMutableBufferPointer<UInt8>, at start: Int) {
        for index in 0..<16 {
            let nibble = UInt8(truncatingIfNeeded: value >> (60 - 4 * UInt64(index))) & 0x0F
            bytes[start + index] = nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
        }
    }
}
