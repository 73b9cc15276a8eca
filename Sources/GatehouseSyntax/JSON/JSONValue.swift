/// A JSON value as Gatehouse's strict parser produced it.
///
/// Numbers keep their literal text so that claims are forwarded exactly as the issuer wrote them
/// and integer checks (`exp`, `nbf`, `iat`) never go through floating point.
/// Objects cannot hold duplicate members: the parser rejects them.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    /// The number's literal JSON text, e.g. `1700000000`, `-1.5e3`.
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    @inlinable public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    @inlinable public var objectValue: [String: JSONValue]? {
        if case .object(let value) = self { return value }
        return nil
    }

    @inlinable public var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    @inlinable public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The value as a whole number, only when the literal is a plain integer (no fraction,
    /// no exponent) that fits in `Int64`.
    @inlinable public var integerValue: Int64? {
        guard case .number(let literal) = self else { return nil }
        return Int64(literal)
    }

    /// Follows a dot path (`"address.country"`) through nested objects.
    @inlinable public func value(atPath path: some StringProtocol) -> JSONValue? {
        var current = self
        for component in path.split(separator: ".", omittingEmptySubsequences: false) {
            guard case .object(let members) = current, let next = members[String(component)] else { return nil }
            current = next
        }
        return current
    }
}
