import NIOHTTP1
import GatehouseSyntax
@testable import GatehouseRules

/// Compiles and runs expressions over a fixed claim set and request, for the CEL unit tests.
enum CELTestSupport {
    static let claims: [String: JSONValue] = [
        "sub": .string("user-1"),
        "tenant": .string("acme"),
        "groups": .array([.string("dev"), .string("admin"), .string("ops")]),
        "level": .number("3"),
        "ratio": .number("1.5"),
        "big": .number("1e3"),
        "nothing": .null,
        "verified": .bool(true),
        "name": .string("café"),
        "org": .object(["id": .number("42"), "tags": .array([])]),
    ]

    static func activation(claims: [String: JSONValue] = CELTestSupport.claims) -> CELActivation {
        CELActivation(
            claims: claims, method: "GET", path: "/v1/orders", host: "api.example.com",
            headers: HTTPHeaders([("X-Org", "acme"), ("Accept", "a"), ("accept", "b")]))
    }

    static func compile(_ source: String, purpose: CELProgram.Purpose = .anyValue, maxHeaderBytes: Int = 16384) throws(CELCompileError) -> CELProgram {
        try CELProgram(source, purpose: purpose, cost: CELCost(maxHeaderBytes: maxHeaderBytes))
    }

    /// The value, or "error: …" / "compile error: …".
    static func run(_ source: String, claims: [String: JSONValue] = CELTestSupport.claims) -> String {
        do {
            let program = try compile(source)
            switch program.evaluate(activation(claims: claims)) {
            case .success(let value): return render(value)
            case .failure(let error): return "error: \(error.message)"
            }
        } catch {
            return "compile error: \(error.message)"
        }
    }

    /// A value in CEL's own literal syntax, with its type where the syntax hides it.
    static func render(_ value: CELValue) -> String {
        switch value {
        case .null: "null"
        case .bool(let flag): String(flag)
        case .int(let number): String(number)
        case .uint(let number): "\(number)u"
        case .double(let number): "double(\(CELFormat.double(number)))"
        case .string(let text): "\"\(text)\""
        case .bytes(let bytes): "b\(bytes)"
        case .list(let list): "[" + (0..<list.count).map { render(list[$0]) }.joined(separator: ", ") + "]"
        case .map(let map): "{" + map.keys.map { "\(render($0)): \(render(map.value(at: $0)!))" }.joined(separator: ", ") + "}"
        case .type(let type): type.rawValue
        }
    }
}
