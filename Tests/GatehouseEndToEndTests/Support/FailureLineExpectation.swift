import Crypto
import Foundation
@testable import Gatehouse
import Testing
import GatehouseSyntax
import GatehouseTokens
import GatehouseVocabulary

/// What docs/security.md §1 and docs/reference.md §8 promise of one failure-log line, checked field by
/// field: the reason and status, the request's id, peer, method and path, the unverified `iss`/`kid`/`alg`
/// exactly as the token carried them (cut to 256 bytes), the token's fingerprint, a `detail`, `sub` only
/// once a signature verified, no field outside the schema, and never the token or its signature.
struct FailureLineExpectation {
    var reason: FailureReason
    var status: Int
    var method: String
    /// The request target; the line holds its path without the query.
    var path: String
    var requestID: String?
    /// The token as presented (empty when none was).
    var token: String
    /// The token came as `Authorization: Bearer <token>`, so its fingerprint is known.
    var presentedAsBearer: Bool
    var clientIP = "127.0.0.1"

    static let schema: Set<String> = [
        "ts", "event", "status", "reason", "request_id", "client_ip", "method", "path", "provider", "iss", "kid", "alg", "sub",
        "token_fingerprint", "user_agent", "detail",
    ]

    /// Decided before any signature verified: such a line never names a `sub`.
    static let beforeSignature: Set<FailureReason> = [
        .missingToken, .malformedToken, .unsupportedAlgorithm, .unknownIssuer, .unknownKey, .badSignature,
    ]

    func check(_ object: [String: JSONValue], line: String, sourceLocation: SourceLocation) {
        #expect(Set(object.keys).isSubset(of: Self.schema), "fields outside the schema: \(line)", sourceLocation: sourceLocation)
        #expect(object["event"] == .string("auth_failure"), sourceLocation: sourceLocation)
        #expect(object["status"] == .number(String(status)), sourceLocation: sourceLocation)
        #expect(object["reason"] == .string(reason.rawValue), sourceLocation: sourceLocation)
        if let requestID { #expect(object["request_id"] == .string(requestID), sourceLocation: sourceLocation) }
        #expect(object["client_ip"] == .string(clientIP), sourceLocation: sourceLocation)
        #expect(object["method"] == .string(method), sourceLocation: sourceLocation)
        let pathOnly = String(path.prefix { $0 != "?" })
        #expect(object["path"] == .string(pathOnly), sourceLocation: sourceLocation)
        let timestamp = object["ts"]?.stringValue ?? ""
        #expect(timestamp.utf8.count == 24 && timestamp.hasSuffix("Z"), "ts \(timestamp)", sourceLocation: sourceLocation)
        let detail = object["detail"]?.stringValue ?? ""
        #expect(!detail.isEmpty, "no detail: \(line)", sourceLocation: sourceLocation)
        if Self.beforeSignature.contains(reason) {
            #expect(object["sub"] == nil, "sub logged before a signature verified: \(line)", sourceLocation: sourceLocation)
        }
        checkFingerprint(object, sourceLocation: sourceLocation)
        checkUnverifiedFields(object, line: line, sourceLocation: sourceLocation)
        checkTokenNotLogged(object, line: line, sourceLocation: sourceLocation)
    }

    private func checkFingerprint(_ object: [String: JSONValue], sourceLocation: SourceLocation) {
        // A token with whitespace inside is refused as presented, before it is extracted: no fingerprint.
        guard presentedAsBearer, !token.isEmpty, !token.contains(where: \.isWhitespace) else { return }
        let digest = SHA256.hash(data: Array(token.utf8)).map { String(format: "%02x", $0) }.joined()
        #expect(object["token_fingerprint"] == .string("sha256:" + digest.prefix(12)), sourceLocation: sourceLocation)
    }

    /// `iss`, `kid` and `alg` are logged as the token carried them when its JWS parsed; whenever a line has
    /// one, it is the token's own value.
    private func checkUnverifiedFields(_ object: [String: JSONValue], line: String, sourceLocation: SourceLocation) {
        let (header, payload) = Self.segments(token)
        let parsedStrictly: Set<FailureReason> = [.unknownKey, .badSignature]
        for (field, carried) in [("kid", header?["kid"]), ("alg", header?["alg"]), ("iss", payload?["iss"])] {
            let expected = carried?.stringValue.map { LogText.truncated($0) }
            if let logged = object[field] {
                #expect(logged == expected.map(JSONValue.string), "\(field) is not the token's: \(line)", sourceLocation: sourceLocation)
            } else if parsedStrictly.contains(reason), expected != nil {
                Issue.record("\(field) missing though the token parsed: \(line)", sourceLocation: sourceLocation)
            }
        }
    }

    private func checkTokenNotLogged(_ object: [String: JSONValue], line: String, sourceLocation: SourceLocation) {
        guard !token.isEmpty else { return }
        if token.utf8.count >= 8 {
            #expect(!line.contains(token), "the token was logged: \(line)", sourceLocation: sourceLocation)
        } else {
            #expect(!object.values.contains(.string(token)), "the token was logged: \(line)", sourceLocation: sourceLocation)
        }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        if parts.count == 3, parts[2].utf8.count >= 8 {
            #expect(!line.contains(parts[2]), "the signature was logged: \(line)", sourceLocation: sourceLocation)
        }
    }

    /// The token's header and payload as JSON objects, when they decode.
    static func segments(_ token: String) -> ([String: JSONValue]?, [String: JSONValue]?) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count >= 2 else { return (nil, nil) }
        func object(_ segment: Substring) -> [String: JSONValue]? {
            guard let bytes = Base64URL.decode(Array(segment.utf8)) else { return nil }
            return (try? StrictJSON.parse(bytes))?.objectValue
        }
        return (object(parts[0]), object(parts[1]))
    }
}

/// One `gatehouse_auth_failures_total` series.
struct AuthFailureSeries: Hashable, CustomStringConvertible {
    var reason: String
    var provider: String
    var description: String { "{reason=\"\(reason)\",provider=\"\(provider)\"}" }
}

extension TestEnvironment {
    /// Every `gatehouse_auth_failures_total` series on the admin port's `/metrics` now.
    func authFailureCounts() async throws -> [AuthFailureSeries: Double] {
        let text = try await admin("/metrics").body
        var counts: [AuthFailureSeries: Double] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("gatehouse_auth_failures_total{") {
            guard let close = line.firstIndex(of: "}"), let value = Double(line[line.index(after: close)...].trimmingCharacters(in: .whitespaces))
            else { continue }
            var labels: [String: String] = [:]
            for pair in line[line.index(after: line.firstIndex(of: "{")!)..<close].split(separator: ",") {  // safe: prefix has "{"
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.count == 2 { labels[String(parts[0])] = String(parts[1].dropFirst().dropLast()) }
            }
            counts[AuthFailureSeries(reason: labels["reason"] ?? "", provider: labels["provider"] ?? "")] = value
        }
        return counts
    }
}

extension TestEnvironment {
    /// `gatehouse_requests_total{route_auth,outcome}` now.
    func requestCount(routeAuth: String, outcome: String) async throws -> Double {
        try await metric("gatehouse_requests_total{route_auth=\"\(routeAuth)\",outcome=\"\(outcome)\"}")
    }

    /// One series' value on the admin port's `/metrics` now (it must exist).
    func metric(_ series: String) async throws -> Double {
        let text = try await admin("/metrics").body
        let line = try #require(text.split(separator: "\n").first { $0.hasPrefix(series + " ") }, "no series \(series)")
        return try #require(Double(line.dropFirst(series.count + 1)))
    }
}
