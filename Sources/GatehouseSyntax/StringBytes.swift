#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#else
import Darwin
#endif

/// A string's UTF-8 looked at in place, for the scans the hot paths make of a field value (a token is a
/// kilobyte): over a buffer the loops are tight, where `String.UTF8View`'s iterator costs several times more
/// per byte.
public enum StringBytes {
    /// `body` over the string's UTF-8 bytes (a native string's own storage, borrowed: `withUTF8` needs a `var`, and
    /// the copy into one retained and released a heap string on every call; a bridged one's made contiguous once).
    @inline(__always)
    @inlinable public static func withBytes<Result>(of string: String, _ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result {
        if let result = try string.utf8.withContiguousStorageIfAvailable(body) { return result }
        var string = string
        return try string.withUTF8(body)
    }

    public static func contains(_ byte: UInt8, in string: String) -> Bool {
        withBytes(of: string) { contains(byte, in: $0) }
    }

    /// `memchr` over the bytes: a token is a kilobyte (a byte-by-byte search was 1.6 % of a request's CPU).
    public static func contains(_ byte: UInt8, in bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return false }
        return memchr(base, Int32(byte), bytes.count) != nil
    }

    @inlinable public static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var seen: UInt8 = 0
        for byte in bytes { seen |= byte }
        return seen < 0x80
    }

    @inlinable public static func isASCII(_ string: String) -> Bool {
        withBytes(of: string) { isASCII($0) }
    }

    /// The string of these UTF-8 bytes; nil when they are not UTF-8. ASCII, the common case, is taken as it is
    /// (`String(validating:)` alone instantiates generic metadata on every call).
    @inlinable public static func string(validatingUTF8 bytes: ArraySlice<UInt8>) -> String? {
        bytes.withUnsafeBufferPointer { buffer in
            isASCII(buffer) ? String(decoding: buffer, as: UTF8.self) : String(validating: buffer, as: UTF8.self)
        }
    }
}

extension String.UTF8View {
    /// ASCII case-insensitive comparison without allocating lowered copies.
    public func elementsEqualIgnoringASCIICase(_ other: String.UTF8View) -> Bool {
        guard count == other.count else { return false }
        // Over the two buffers (a zip of the views' iterators showed in profiles): the views' own storage where they
        // have it (no string made of either, nothing retained), else contiguous copies.
        if let equal = withContiguousStorageIfAvailable({ lhs in other.withContiguousStorageIfAvailable { rhs in Self.equalIgnoringASCIICase(lhs, rhs) } }),
            let equal
        {
            return equal
        }
        return StringBytes.withBytes(of: String(self)) { lhs in
            StringBytes.withBytes(of: String(other)) { rhs in Self.equalIgnoringASCIICase(lhs, rhs) }
        }
    }

    private static func equalIgnoringASCIICase(_ lhs: UnsafeBufferPointer<UInt8>, _ rhs: UnsafeBufferPointer<UInt8>) -> Bool {
        for index in 0..<lhs.count where lhs[index] != rhs[index] {
            let folded = lhs[index] | 0x20
            guard folded == rhs[index] | 0x20, folded >= UInt8(ascii: "a"), folded <= UInt8(ascii: "z") else { return false }
        }
        return true
    }
}
