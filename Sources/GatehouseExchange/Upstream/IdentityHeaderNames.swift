import GatehouseSyntax
public import GatehouseConfig

/// The header names that only Gatehouse may send upstream (docs/reference.md §5): every name that, lower-cased with
/// `_` read as `-`, starts with `x-auth-` or equals a configured identity header name under the same folding.
///
/// The folding matters because many upstream stacks (CGI, PHP, Django, Rails, nginx with underscores allowed)
/// read `X_Auth_Subject` and `X-Auth-Subject` as the same header (docs/security.md P01-P04).
public struct IdentityHeaderNames: Sendable {
    /// Configured names, folded, as bytes.
    private let foldedNames: [[UInt8]]
    /// The configured names in lower case, once each: what Gatehouse may set besides its own (`x-auth-provider`, …).
    package let lowercasedNames: [String]
    /// Every other spelling of every name Gatehouse may set (`ownNames` and the configured ones), with `-` and `_`
    /// written either way (`x_auth_subject`, `x-auth_subject`, …): what a gateway that never shows Gatehouse the client's
    /// header list (Envoy's HTTP ext_authz protocol) must remove, since upstreams that read `_` as `-` take them for it.
    package let otherSpellings: [String]

    /// The identity headers Gatehouse sets of its own, beside the configured ones.
    package static let ownNames = IdentityHeaderCatalog.ownNames.map { $0.lowercased() }

    /// A name with more separators than this has only its all-`-` and all-`_` spellings (2^8 spellings at most per name).
    static let spelledSeparatorLimit = 8

    /// - Parameters:
    ///   - mappings: every identity header mapping: `[headers]` and every provider's `[provider.headers]`.
    ///   - otherNames: other headers only Gatehouse sets: `[assertion] header`.
    public init(mappings: [HeaderMapping], otherNames: [String] = []) {
        var folded: [[UInt8]] = []
        var lowercased: [String] = []
        for configured in mappings.map(\.name) + otherNames {
            let name = configured.utf8.map(ASCIIByte.foldedHeaderNameByte)
            if !folded.contains(name) { folded.append(name) }
            let lower = configured.lowercased()
            if !lowercased.contains(lower) { lowercased.append(lower) }
        }
        foldedNames = folded
        lowercasedNames = lowercased
        let setNames = Self.ownNames + lowercased
        var spellings: [String] = []
        for name in setNames {
            for spelling in Self.spellings(of: name) where !setNames.contains(spelling) && !spellings.contains(spelling) {
                spellings.append(spelling)
            }
        }
        otherSpellings = spellings
    }

    /// Every spelling of `name` (lower case) with each of its `-` and `_` written either way (2^separators of them).
    static func spellings(of name: String) -> [String] {
        let bytes = name.utf8.map { $0 == ASCIIByte.underscore ? ASCIIByte.hyphen : $0 }
        let separators = bytes.indices.filter { bytes[$0] == ASCIIByte.hyphen }
        guard separators.count <= spelledSeparatorLimit else {
            return [bytes, bytes.map { $0 == ASCIIByte.hyphen ? ASCIIByte.underscore : $0 }].map { String(decoding: $0, as: UTF8.self) }
        }
        return (0..<(1 << separators.count)).map { mask in
            var spelled = bytes
            for (bit, index) in separators.enumerated() where mask & (1 << bit) != 0 { spelled[index] = ASCIIByte.underscore }
            return String(decoding: spelled, as: UTF8.self)
        }
    }

    /// Whether an incoming header of this name must be removed before identity headers are added.
    public func isIdentityHeader(_ name: String) -> Bool {
        if ASCIIByte.hasFoldedHeaderNamePrefix(name, Self.reservedPrefix) { return true }
        let count = name.utf8.count
        return foldedNames.contains { $0.count == count && ASCIIByte.hasFoldedHeaderNamePrefix(name, $0) }
    }

    private static let reservedPrefix: [UInt8] = Array("x-auth-".utf8)
}
