// TEMPORARY: signatures of helper-owned APIs so the rest compiles; deleted when they land.
public enum Base64URL {
    public static func decode(_ text: some Collection<UInt8>) -> [UInt8]? { nil }
    public static func encode(_ bytes: some Sequence<UInt8>) -> String { "" }
}
public struct StrictJSONError: Error, Sendable, Equatable {}
public enum StrictJSON {
    public static func parse(_ bytes: some Collection<UInt8>, maxDepth: Int = 32) throws(StrictJSONError) -> JSONValue { .null }
}
extension JSONValue { public var compactJSON: String { "" } }
public struct CompactJWS: Sendable {
    public let algorithm: JWSAlgorithm
    public let keyID: String?
    public let header: [String: JSONValue]
    public let claims: [String: JSONValue]
    public let signingInput: [UInt8]
    public let signature: [UInt8]
    public let encodedPayload: Substring
    public static func parse(_ token: Substring, maxBytes: Int) throws(AuthFailure) -> CompactJWS { throw AuthFailure(.malformedToken, "") }
}
public enum ClaimChecks {
    public static func checkTimes(_ claims: [String: JSONValue], now: Int64, leeway: Int64) throws(AuthFailure) {}
    public static func audiences(_ claims: [String: JSONValue]) throws(AuthFailure) -> [String] { [] }
    public static func string(_ name: String, in claims: [String: JSONValue], required: Bool) throws(AuthFailure) -> String? { nil }
}
public struct VerificationKey: Sendable {
    public let keyID: String?
    public let algorithms: Set<JWSAlgorithm>
    public func isValidSignature(_ signature: [UInt8], for signingInput: [UInt8], algorithm: JWSAlgorithm) -> Bool { false }
}
public struct SkippedKey: Sendable, Equatable { public let keyID: String?; public let reason: String }
public struct JWKSetError: Error, Sendable {}
public struct JWKSet: Sendable {
    public let keys: [VerificationKey]
    public let skipped: [SkippedKey]
    public static func parse(_ bytes: some Collection<UInt8>, allowedAlgorithms: Set<JWSAlgorithm>) throws(JWKSetError) -> JWKSet { throw JWKSetError() }
    public func candidates(keyID: String?, algorithm: JWSAlgorithm) -> [VerificationKey] { [] }
}
