import Crypto
package import Foundation
import GatehouseSyntax
package import GatehouseVocabulary

/// One line of the failure log (docs/reference.md §8), before rate limiting.
package struct FailureEvent: Sendable {
    package var timestamp: Date
    package var status: Int
    package var failure: AuthFailure
    package var requestID: String
    package var clientIP: String
    package var method: String
    /// The normalized path only: never the query string.
    package var path: String
    package var userAgent: String?
    /// The presented token, only ever logged as its fingerprint (computed for lines actually written).
    package var token: Substring?
    /// A Check's refusal: `ext_authz_grpc` or `ext_authz_http` (the client is Envoy's `source.address`).
    package var via: String? = nil
    /// Under an MCP server: the refused message's `method` and tool, prompt or resource (`mcp_method`, `mcp_name`).
    package var mcpMethod: String? = nil
    package var mcpName: String? = nil

    package init(
        timestamp: Date, status: Int, failure: AuthFailure, requestID: String, clientIP: String, method: String, path: String, userAgent: String?,
        token: Substring?, via: String? = nil
    ) {
        self.timestamp = timestamp
        self.status = status
        self.failure = failure
        self.requestID = requestID
        self.clientIP = clientIP
        self.method = method
        self.path = path
        self.userAgent = userAgent
        self.token = token
        self.via = via
    }

    /// `sha256:` + the first 12 hex digits of SHA-256 of the token, when there was one.
    var tokenFingerprint: String? { token.map(Self.fingerprint) }

    package static func fingerprint(of token: Substring) -> String {
        let digest = SHA256.hash(data: Array(token.utf8))
        return "sha256:" + digest.prefix(6).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

    /// The JSON line, fields in the documented order; absent fields are left out. Built in one
    /// string (up to `max_lines_per_second` of these are written every second of a 401 flood).
    func jsonLine(subject: String?) -> String {
        var line = "{\"ts\":"
        line.reserveCapacity(768)
        line.appendJSONQuoted(Self.timestamp(timestamp))
        line += ",\"event\":\"auth_failure\",\"status\":"
        line += String(status)
        let required: [(String, String)] = [
            ("reason", failure.reason.rawValue),
            ("request_id", LogText.truncated(requestID)),
            ("client_ip", clientIP),
            ("method", LogText.truncated(method)),
            ("path", LogText.truncated(path, maxBytes: 2048)),
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
            ("via", via),
            ("mcp_method", mcpMethod.map { LogText.truncated($0) }),
            ("mcp_name", mcpName.map { LogText.truncated($0, maxBytes: 512) }),
        ]
        for (name, value) in required {
            Self.appendField(name, value, to: &line)
        }
        for case let (name, value?) in optional {
            Self.appendField(name, value, to: &line)
        }
        line += "}"
        return line
    }

    private static func appendField(_ name: String, _ value: String, to line: inout String) {
        line += ",\""
        line += name
        line += "\":"
        line.appendJSONQuoted(value)
    }

    /// `YYYY-MM-DDTHH:MM:SS.sssZ`, milliseconds truncated: what Foundation's ISO 8601 style with
    /// fractional seconds writes, at a fraction of its cost (no formatter, no calendar).
    package static func timestamp(_ date: Date) -> String {
        let sinceReference = date.timeIntervalSinceReferenceDate
        let whole = sinceReference.rounded(.down)
        let milliseconds = min(Int((sinceReference - whole) * 1000), 999)
        let seconds = Int64(whole) + Int64(Date.timeIntervalBetween1970AndReferenceDate)
        let digits = String(milliseconds)
        return NumericDate.formatted(seconds).dropLast() + "." + String(repeating: "0", count: 3 - digits.count) + digits + "Z"
    }
}
