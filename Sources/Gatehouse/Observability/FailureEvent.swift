import Crypto
import Foundation

/// One line of the failure log (INTERFACE.md §7), before rate limiting.
struct FailureEvent: Sendable {
    var timestamp: Date
    var status: Int
    var failure: AuthFailure
    var requestID: String
    var clientIP: String
    var method: String
    /// The normalized path only: never the query string.
    var path: String
    var userAgent: String?
    /// The presented token, only ever logged as its fingerprint (computed for lines actually written).
    var token: Substring?

    /// `sha256:` + the first 12 hex digits of SHA-256 of the token, when there was one.
    var tokenFingerprint: String? { token.map(Self.fingerprint) }

    static func fingerprint(of token: Substring) -> String {
        let digest = SHA256.hash(data: Array(token.utf8))
        return "sha256:" + digest.prefix(6).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

    /// The JSON line, fields in the documented order; absent fields are left out.
    func jsonLine(subject: String?) -> String {
        var fields: [(String, String)] = [
            ("ts", Self.timestamp(timestamp).jsonQuoted),
            ("event", "\"auth_failure\""),
            ("status", String(status)),
            ("reason", failure.reason.rawValue.jsonQuoted),
            ("request_id", LogText.truncated(requestID).jsonQuoted),
            ("client_ip", clientIP.jsonQuoted),
            ("method", LogText.truncated(method).jsonQuoted),
            ("path", LogText.truncated(path, maxBytes: 2048).jsonQuoted),
        ]
        let optional: [(String, String?)] = [
            ("provider", failure.provider),
            ("iss", failure.issuer.map { LogText.truncated($0) }),
            ("kid", failure.keyID.map { LogText.truncated($0) }),
            ("alg", failure.algorithm.map { LogText.truncated($0) }),
            ("sub", subject.map { LogText.truncated($0) }),
            ("token_fingerprint", tokenFingerprint),
            ("user_agent", userAgent.map { LogText.truncated($0) }),
            ("detail", LogText.truncated(failure.detail, maxBytes: 1024)),
        ]
        for (name, value) in optional {
            if let value { fields.append((name, value.jsonQuoted)) }
        }
        return "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }

    /// `YYYY-MM-DDTHH:MM:SS.sssZ`, milliseconds truncated: what Foundation's ISO 8601 style with
    /// fractional seconds writes, at a fraction of its cost (no formatter, no calendar).
    static func timestamp(_ date: Date) -> String {
        let sinceReference = date.timeIntervalSinceReferenceDate
        let whole = sinceReference.rounded(.down)
        let milliseconds = min(Int((sinceReference - whole) * 1000), 999)
        let seconds = Int64(whole) + Int64(Date.timeIntervalBetween1970AndReferenceDate)
        let digits = String(milliseconds)
        return ClaimChecks.formatted(seconds).dropLast() + "." + String(repeating: "0", count: 3 - digits.count) + digits + "Z"
    }
}
