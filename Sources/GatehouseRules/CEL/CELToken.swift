/// One token of CEL's lexical grammar.
enum CELToken: Sendable, Equatable {
    case int(Int64)
    /// An int literal too large for `Int64` that only a minus sign makes valid (`-9223372036854775808`).
    case intMagnitude(UInt64)
    case uint(UInt64)
    case double(Double)
    case string(String)
    case bytes([UInt8])
    case identifier(String)
    /// Operators and punctuation: `==`, `&&`, `(`, `.`, …
    case symbol(String)
    case end
}
