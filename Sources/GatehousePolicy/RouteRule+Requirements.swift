public import GatehouseSyntax
import GatehouseTokens
public import GatehouseVocabulary

extension RouteRule {
    /// Checks the route's claim requirements against a verified token's claims (docs/reference.md §3, §4).
    ///
    /// In this order, the first unmet one answers:
    /// - `scopes`: all required, read from `scope` (space-separated string) and `scp` (array of strings or
    ///   space-separated string; array elements are not split) -> `insufficient_scope`, with `requiredScopes` set to the route's scopes;
    /// - `groups`: any one, read from `groups` and `cognito:groups` (array of strings or one string) -> `forbidden`;
    /// - `roles`: any one, read from `roles` (Entra app roles; array of strings or one string) -> `forbidden`;
    /// - `email_domains`: the domain after the last `@` of `email`, compared case-insensitively (ASCII only)
    ///   and exactly, no subdomains (`a@b.com@evil.com` is `evil.com`) -> `forbidden`;
    /// - `require_email_verified`: `email_verified` is `true` or the string `"true"` (Apple) -> `forbidden`.
    ///
    /// `email_domains` does not imply `require_email_verified`: they are independent settings, and a route
    /// that trusts the e-mail domain of unverified addresses should set both (an IdP may let users type any
    /// address). Claims of the wrong type count as absent. Provider restrictions are not checked here.
    ///
    /// - Returns: nil when every requirement is met.
    public func checkRequirements(claims: some JSONMembers) -> AuthFailure? {
        if !scopes.isEmpty {
            let granted = Self.grantedScopes(claims)
            let missing = scopes.filter { required in !granted.contains { Self.sameBytes($0, required) } }
            if !missing.isEmpty {
                var failure = AuthFailure(.insufficientScope, "missing scope(s): \(missing.joined(separator: " "))")
                failure.requiredScopes = scopes
                return failure
            }
        }
        if !groups.isEmpty {
            let memberships = Self.strings(claims["groups"], splittingStrings: false)
                + Self.strings(claims["cognito:groups"], splittingStrings: false)
            if !groups.contains(where: { group in memberships.contains { Self.sameBytes($0, group) } }) {
                return AuthFailure(.forbidden, "not in any of the groups: \(groups.joined(separator: ", "))")
            }
        }
        if !roles.isEmpty {
            let assigned = Self.strings(claims["roles"], splittingStrings: false)
            if !roles.contains(where: { role in assigned.contains { Self.sameBytes($0, role) } }) {
                return AuthFailure(.forbidden, "has none of the roles: \(roles.joined(separator: ", "))")
            }
        }
        if !serviceAccounts.isEmpty {
            let account = claims["kubernetes_service_account"]?.stringValue ?? ""
            let namespace = account.split(separator: "/").first.map { String($0) + "/*" } ?? ""
            if account.isEmpty || !serviceAccounts.contains(where: { $0 == account || $0 == namespace }) {
                return AuthFailure(.forbidden, "not one of the service accounts: \(serviceAccounts.joined(separator: ", "))")
            }
        }
        if !emailDomains.isEmpty {
            guard let domain = Self.emailDomain(claims["email"]?.stringValue), emailDomains.contains(where: { Self.sameBytes($0, domain) }) else {
                return AuthFailure(.forbidden, "e-mail domain not in: \(emailDomains.joined(separator: ", "))")
            }
        }
        if requireEmailVerified, !Self.isTrue(claims["email_verified"]) {
            return AuthFailure(.forbidden, "e-mail address not verified")
        }
        return nil
    }

    /// The scopes a token grants: `scope` (space-separated) and `scp` (an array, or space-separated).
    package static func grantedScopes(_ claims: some JSONMembers) -> [Substring] {
        (claims["scope"]?.stringValue?.split(separator: " ") ?? []) + strings(claims["scp"], splittingStrings: true)
    }

    /// The strings of an array-of-strings claim, or of a string claim (split at spaces when asked).
    /// Non-string array elements are ignored.
    private static func strings(_ claim: JSONValue?, splittingStrings: Bool) -> [Substring] {
        switch claim {
        case .string(let value):
            return splittingStrings ? value.split(separator: " ") : [value[...]]
        case .array(let elements):
            return elements.compactMap { $0.stringValue?[...] }
        default:
            return []
        }
    }

    /// The ASCII-lower-cased part after the last `@`; nil when there is no `@` or either side is empty.
    static func emailDomain(_ email: String?) -> String? {
        guard let email, let at = email.utf8.lastIndex(of: UInt8(ascii: "@")) else { return nil }
        let domain = email.utf8[email.utf8.index(after: at)...]
        guard at != email.utf8.startIndex, !domain.isEmpty else { return nil }
        return String(decoding: domain.map(ASCIIByte.lowercased), as: UTF8.self)
    }

    /// Byte-wise equality: claims are compared exactly, not up to Unicode canonical equivalence as `==` would.
    private static func sameBytes(_ lhs: some StringProtocol, _ rhs: some StringProtocol) -> Bool {
        lhs.utf8.elementsEqual(rhs.utf8)
    }

    /// `true`, or the string `"true"` as Apple sends it.
    private static func isTrue(_ claim: JSONValue?) -> Bool {
        switch claim {
        case .bool(let value): return value
        case .string(let value): return value == "true"
        default: return false
        }
    }
}
