import Foundation
import NIOHTTP1
import Testing
import GatehouseSyntax
@testable import GatehouseRules

/// Gatehouse's CEL against two independent implementations on PyPI (issue 44): `common-expression-language` (a Rust
/// implementation) and `cel-python`. Resources/cel/differential.py generates the expressions and claim sets,
/// evaluates each with both, and states what the cel-spec says for each case: their shared answer where they agree
/// with the spec, the spec's answer (cited in the case's `ruling`) where they disagree or are both wrong. Gatehouse
/// must give that answer: the same value, or an error (messages are not compared; a refusal at load is an error).
struct CELDifferentialTests {
    @Test func everyCaseGetsTheSpecsAnswer() throws {
        let cases = try Self.cases()
        #expect(cases.count >= 300, "the differential must hold at least 300 expressions")
        var mismatches: [String] = []
        for testCase in cases {
            guard let expression = testCase["expression"]?.stringValue, let expected = testCase["expected"]?.objectValue else {
                Issue.record("a case without expression or expected: \(testCase)")
                continue
            }
            let outcome = Self.evaluate(expression, claims: testCase["claims"]?.objectValue ?? [:], request: testCase["request"]?.objectValue ?? [:])
            let agrees: Bool
            switch (outcome, expected["value"]) {
            case (.failure, nil): agrees = expected["error"] != nil
            case (.success(let value), let encoded?): agrees = Self.same(value, encoded)
            default: agrees = false
            }
            if !agrees {
                let ruling = testCase["ruling"]?.stringValue ?? ""
                mismatches.append("\(expression): Gatehouse \(Self.describe(outcome)), expected \(JSONValue.object(expected).compactJSON) (\(ruling))")
            }
        }
        #expect(mismatches.isEmpty, Comment(rawValue: "\(mismatches.count) of \(cases.count) differ:\n" + mismatches.joined(separator: "\n")))
    }

    static func cases() throws -> [[String: JSONValue]] {
        let script = try #require(Bundle.module.url(forResource: "differential", withExtension: "py", subdirectory: "cel"))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script.path]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "differential.py needs python3 with common-expression-language and cel-python (scripts/test.sh installs them)")
        let document = try StrictJSON.parse(Array(data), maxDepth: 64)
        return (document.objectValue?["cases"]?.arrayValue ?? []).compactMap(\.objectValue)
    }

    static func evaluate(_ expression: String, claims: [String: JSONValue], request: [String: JSONValue]) -> Result<CELValue, CELEvaluationError> {
        let program: CELProgram
        do {
            program = try CELProgram(expression, purpose: .anyValue, cost: CELCost(maxHeaderBytes: 16384))
        } catch {
            return .failure(CELEvaluationError(message: "at load: \(error.message)"))
        }
        let headers = (request["headers"]?.objectValue ?? [:]).sorted { $0.key < $1.key }.map { ($0.key, $0.value.stringValue ?? "") }
        return program.evaluate(CELActivation(
            claims: claims, method: request["method"]?.stringValue ?? "", path: request["path"]?.stringValue ?? "",
            host: request["host"]?.stringValue ?? "", headers: HTTPHeaders(headers)))
    }

    /// Whether a value is the one the script encoded (`{"int": "3"}`, `{"list": [...]}`, `{"map": [[k, v], ...]}`, …).
    static func same(_ value: CELValue, _ encoded: JSONValue) -> Bool {
        guard let object = encoded.objectValue, object.count == 1, let (kind, payload) = object.first else { return false }
        switch (kind, value) {
        case ("int", .int(let number)): return payload.stringValue == String(number)
        case ("uint", .uint(let number)): return payload.stringValue == String(number)
        case ("double", .double(let number)):
            let text = payload.stringValue ?? ""
            let wanted = text == "NaN" ? Double.nan : (text == "Infinity" ? .infinity : (text == "-Infinity" ? -.infinity : Double(text)))
            guard let wanted else { return false }
            return wanted.isNaN ? number.isNaN : (wanted == number && wanted.sign == number.sign)
        case ("bool", .bool(let flag)): return payload.boolValue == flag
        case ("string", .string(let text)): return payload.stringValue.map { $0.utf8.elementsEqual(text.utf8) } ?? false
        case ("bytes", .bytes(let bytes)): return payload.stringValue.flatMap { Data(base64Encoded: $0) }.map { Array($0) == bytes } ?? false
        case ("null", .null): return true
        case ("type", .type(let type)): return payload.stringValue == type.rawValue
        case ("list", .list(let list)):
            guard let elements = payload.arrayValue, elements.count == list.count else { return false }
            return elements.indices.allSatisfy { same(list[$0], elements[$0]) }
        case ("map", .map(let map)):
            guard let entries = payload.arrayValue, entries.count == map.count else { return false }
            return entries.allSatisfy { entry in
                guard let pair = entry.arrayValue, pair.count == 2, let key = map.keys.first(where: { same($0, pair[0]) }) else { return false }
                return map.value(at: key).map { same($0, pair[1]) } ?? false
            }
        default:
            return false
        }
    }

    static func describe(_ outcome: Result<CELValue, CELEvaluationError>) -> String {
        switch outcome {
        case .success(let value): "gave \(value)"
        case .failure(let error): "failed: \(error.message)"
        }
    }
}
