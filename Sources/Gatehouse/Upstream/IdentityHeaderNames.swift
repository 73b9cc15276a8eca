/// The header names that only Gatehouse may send upstream (docs/reference.md §5): every name that, lower-cased with
/// `_` read as `-`, starts with `x-auth-` or equals a configured identity header name under the same folding.
///
/// The folding matters because many upstream stacks (CGI, PHP, Django, Rails, nginx with underscores allowed)
/// read `X_Auth_Subject` and `X-Auth-Subject` as the same header (docs/security.md P01-P04).
public struct IdentityHeaderNames: Sendable {
    /// Configured names, folded, as bytes.
    private let foldedNames: [[UInt8]]
    /// The configured names in lower case, once each: what Gatehouse may set besides its own (`x-auth-provider`, …).
    let lowercasedNames: [String]

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
    }

    /// Whether an incoming header of this name must be removed before identity headers are added.
    public func isIdentityHeader(_ name: String) -> Bool {
        if Self.foldedHasPrefix(name, Self.reservedPrefix) { return true }
        let count = name.utf8.count
        return foldedNames.contains { $0.count == count && Self.foldedHasPrefix(name, $0) }
    }

    private static let reservedPrefix: [UInt8] = Array("x-auth-".utf8)

    /// Compares without allocating: this runs for every header of every request.
    static func foldedHasPrefix(_ name: String, _ foldedPrefix: [UInt8]) -> Bool {
        let utf8 = name.utf8
        guard utf8.count >= foldedPrefix.count else { return false }
        return zip(utf8, foldedPrefix).allSatisfy { ASCIIByte.foldedHeaderNameByte($0) == $1 }
    }
}
