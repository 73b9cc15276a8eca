import GatehouseSyntax

/// A value of the Common Expression Language (cel-spec langdef "Values"): what a rule's expression computes.
///
/// Lists and maps wrap the verified token's JSON as it is (`CELList.json`, `CELMap.json`), so a rule that reads two
/// claims converts two claims, not the whole token.
enum CELValue: Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case uint(UInt64)
    case double(Double)
    case string(String)
    case bytes([UInt8])
    case list(CELList)
    case map(CELMap)
    case type(CELType)

    /// A JSON value as CEL sees it: objects as maps, arrays as lists, a number written as an integer that fits
    /// `int` as `int`, every other number as `double`.
    init(json: JSONValue) {
        switch json {
        case .null: self = .null
        case .bool(let value): self = .bool(value)
        case .string(let value): self = .string(value)
        case .array(let elements): self = .list(.json(elements))
        case .object(let members): self = .map(.json(members))
        case .number(let literal):
            if let integer = Int64(literal) {
                self = .int(integer)
            } else {
                self = .double(Double(literal) ?? .nan)
            }
        }
    }

    var type: CELType {
        switch self {
        case .null: .nullType
        case .bool: .bool
        case .int: .int
        case .uint: .uint
        case .double: .double
        case .string: .string
        case .bytes: .bytes
        case .list: .list
        case .map: .map
        case .type: .type
        }
    }
}

/// The runtime types (cel-spec langdef "Values"); `type(x)` gives one, and their names denote them.
enum CELType: String, Sendable, CaseIterable {
    case int, uint, double, bool, string, bytes, list, map, type
    case nullType = "null_type"
}

/// A list: the token's JSON array as it came, or values an expression built.
enum CELList: Sendable {
    case json([JSONValue])
    case values([CELValue])

    var count: Int {
        switch self {
        case .json(let elements): elements.count
        case .values(let elements): elements.count
        }
    }

    subscript(position: Int) -> CELValue {
        switch self {
        case .json(let elements): CELValue(json: elements[position])
        case .values(let elements): elements[position]
        }
    }
}
