import NIOHTTP1
package import GatehouseSyntax

extension RuleExpression {
    /// A `[headers]` expression's value for a token's claims, in §5's encoding (docs/reference.md): a string as a
    /// claim's string; an int, uint, double or bool in CEL's `string()` form; a list of those joined with `,` (a
    /// `,` inside an element as `%2C`). nil, so no header, for `null`, an evaluation error, or any other value.
    package func headerValue(claims: [String: JSONValue]) -> String? {
        let activation = CELActivation(claims: claims, method: "", path: "", host: "", headers: HTTPHeaders())
        guard case .success(let value) = program.evaluate(activation) else { return nil }
        if case .list(let list) = value {
            var elements: [JSONValue] = []
            for position in 0..<list.count {
                guard let element = Self.scalar(list[position]) else { return nil }
                elements.append(element)
            }
            return HeaderValueEncoding.encode(.array(elements))
        }
        return Self.scalar(value).flatMap(HeaderValueEncoding.encode)
    }

    /// A scalar as the JSON value §5 encodes; nil for null, bytes, lists, maps and types.
    private static func scalar(_ value: CELValue) -> JSONValue? {
        switch value {
        case .string(let text): .string(text)
        case .bool(let flag): .bool(flag)
        case .int(let number): .number(String(number))
        case .uint(let number): .number(String(number))
        case .double(let number): .number(CELFormat.double(number))
        default: nil
        }
    }
}
