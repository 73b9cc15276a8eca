import Foundation
import NIOHTTP1
import GatehouseSyntax
import GatehouseRules
import GatehouseConfig
import GatehouseTokens
import GatehouseAuth
import GatehousePolicy
import GatehouseVocabulary

/// `gatehouse bench-verify --rule '<CEL>'`: what one evaluation of a route's `when` rule costs on this core, over the
/// claims of bench/routes.sh's token (tenant, level, a ten-element teams list) and a GET with a few header fields.
public enum RuleBenchmark {
    public struct Measurement: Sendable {
        public let evaluationsPerSecond: Double
        public let nanosecondsPerEvaluation: Double
        public let result: String
    }

    public static func evaluation(rule: String, seconds: Double = 1) throws -> Measurement {
        let expression = try RuleExpression(rule: rule, maxHeaderBytes: 16384)
        let now = Int64(Date().timeIntervalSince1970)
        let claims: [String: JSONValue] = [
            "iss": .string("https://issuer.bench"), "aud": .string("bench-api"), "sub": .string("user-rules"), "iat": .number(String(now)),
            "exp": .number(String(now + 7200)), "email": .string("user-rules@example.com"), "email_verified": .bool(true),
            "name": .string("Bench User"), "tenant": .string("acme"), "level": .number("3"),
            "teams": .array((0..<10).map { .string("team-\($0)") }),
        ]
        let head = HTTPRequestHead(
            version: .http1_1, method: .GET, uri: "/v1/orders",
            headers: HTTPHeaders([("Host", "api.example.com"), ("Authorization", "Bearer x"), ("Accept", "*/*"), ("User-Agent", "wrk")]))
        let rule = RouteRule(auth: .required, condition: expression, index: 0)
        let request = RuleRequest(head: head, path: "/v1/orders", host: "api.example.com")
        let clock = ContinuousClock()
        let deadline = clock.now + .milliseconds(Int(seconds * 1000))
        var evaluations = 0
        var denials = 0
        let start = clock.now
        while clock.now < deadline {
            for _ in 0..<1000 where rule.checkCondition(claims: claims, request: request) != nil { denials += 1 }
            evaluations += 1000
        }
        let elapsed = clock.now - start
        let secondsTaken = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return Measurement(
            evaluationsPerSecond: Double(evaluations) / secondsTaken, nanosecondsPerEvaluation: secondsTaken * 1e9 / Double(evaluations),
            result: denials == 0 ? "allowed" : "denied \(denials) of \(evaluations): \(rule.checkCondition(claims: claims, request: request)?.detail ?? "")")
    }
}
