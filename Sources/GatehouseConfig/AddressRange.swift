#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An IPv4 or IPv6 address or CIDR range (`10.0.0.0/8`, `::1`), for `[listen] trusted_proxies`.
public struct AddressRange: Sendable, Equatable, CustomStringConvertible {
    private let network: [UInt8]
    private let prefixLength: Int
    public let description: String

    /// nil when the text is not an address with an optional prefix length that fits it.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = Self.bytes(of: String(parts[0])) else { return nil }
        let bits = address.count * 8
        var length = bits
        if parts.count == 2 {
            guard let parsed = Int(parts[1]), parsed >= 0, parsed <= bits, String(parsed) == parts[1] else { return nil }
            length = parsed
        }
        network = Self.masked(address, length)
        prefixLength = length
        description = text
    }

    public func contains(_ ip: String) -> Bool {
        guard let address = Self.bytes(of: ip), address.count == network.count else { return false }
        return Self.masked(address, prefixLength) == network
    }

    private static func masked(_ address: [UInt8], _ length: Int) -> [UInt8] {
        address.enumerated().map { index, byte in
            let keep = max(0, min(8, length - index * 8))
            return keep == 8 ? byte : byte & ~(UInt8(0xFF) >> keep)
        }
    }

    /// 4 bytes for IPv4, 16 for IPv6; an IPv4-mapped IPv6 address (`::ffff:10.0.0.1`) counts as IPv4.
    private static func bytes(of text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF { return Array(bytes[12...]) }
        return bytes
    }
}
