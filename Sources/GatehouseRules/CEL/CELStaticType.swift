/// What the load-time check knows of an expression's type: a concrete type, or `dyn` (a claim: known at run time).
indirect enum CELStaticType: Sendable, Equatable, CustomStringConvertible {
    case dyn, null, bool, int, uint, double, string, bytes, type
    case list(CELStaticType)
    case map(CELStaticType, CELStaticType)
    /// The `request` variable: its fields are known.
    case request

    var isDyn: Bool { self == .dyn }

    var isNumeric: Bool { self == .int || self == .uint || self == .double }

    var description: String {
        switch self {
        case .dyn: "dyn"
        case .null: "null_type"
        case .bool: "bool"
        case .int: "int"
        case .uint: "uint"
        case .double: "double"
        case .string: "string"
        case .bytes: "bytes"
        case .type: "type"
        case .list(let element): "list(\(element))"
        case .map(let key, let value): "map(\(key), \(value))"
        case .request: "request"
        }
    }

    /// The type of a literal value.
    init(of value: CELValue) {
        switch value {
        case .null: self = .null
        case .bool: self = .bool
        case .int: self = .int
        case .uint: self = .uint
        case .double: self = .double
        case .string: self = .string
        case .bytes: self = .bytes
        case .list: self = .list(.dyn)
        case .map: self = .map(.dyn, .dyn)
        case .type: self = .type
        }
    }

    /// Whether a value of this type may be of `kind` at run time.
    func admits(_ kind: CELStaticType) -> Bool {
        switch (self, kind) {
        case (.dyn, _): true
        case (.list, .list(.dyn)), (.map, .map(.dyn, .dyn)): true
        case (.request, .map(.dyn, .dyn)): true
        default: self == kind
        }
    }
}
