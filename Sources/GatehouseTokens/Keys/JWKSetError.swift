import GatehouseSyntax

/// A JWK set document that could not be used at all (as opposed to single keys in it, which are skipped).
public struct JWKSetError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong with the document.
    public let message: String

    private init(_ message: String) {
        self.message = message
    }

    /// The document is not strict JSON.
    static func invalidJSON(_ error: StrictJSONError) -> Self {
        Self("not valid JSON: \(error)")
    }

    /// The document is JSON but not an object with a `keys` array (RFC 7517 §5).
    static func notAKeySet(_ why: String) -> Self {
        Self(why)
    }

    /// `invalid JWK set: <message>`.
    public var description: String { "invalid JWK set: \(message)" }
}
