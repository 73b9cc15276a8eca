/// The functions besides operators and macros (cel-spec langdef "List of Standard Definitions"): `size`, the string
/// tests and the conversions.
enum CELFunctions {
    /// `second`: the argument of a two-argument function (`text.startsWith(second)`), nil for the others.
    static func call(_ function: CELFunction, _ first: CELValue, _ second: CELValue?) throws(CELEvaluationError) -> CELValue {
        switch function {
        case .startsWith, .endsWith, .contains:
            guard let second else { throw CELEvaluationError(message: "\(function.rawValue) needs an argument") }
            guard case .string(let text) = first, case .string(let other) = second else { throw .noOverload(function.rawValue, first, second) }
            return .bool(test(function, text, other))
        case .size: return try size(first)
        case .dyn: return first
        case .type: return .type(first.type)
        default: return try convert(function, first)
        }
    }

    /// Strings count code points (`size("café")` is 4), bytes bytes, lists and maps entries.
    private static func size(_ value: CELValue) throws(CELEvaluationError) -> CELValue {
        switch value {
        case .string(let text): return .int(Int64(text.unicodeScalars.count))
        case .bytes(let bytes): return .int(Int64(bytes.count))
        case .list(let list): return .int(Int64(list.count))
        case .map(let map): return .int(Int64(map.count))
        default: throw .noOverload("size", value)
        }
    }

    /// Byte-wise, as CEL compares strings (never up to Unicode canonical equivalence, as Swift's `hasPrefix` would).
    private static func test(_ function: CELFunction, _ text: String, _ other: String) -> Bool {
        switch function {
        case .startsWith: return text.utf8.starts(with: other.utf8)
        case .endsWith: return text.utf8.reversed().starts(with: other.utf8.reversed())
        default:
            var text = text, other = other
            return text.withUTF8 { haystack in other.withUTF8 { needle in contains(needle, in: haystack) } }
        }
    }

    private static func contains(_ part: UnsafeBufferPointer<UInt8>, in text: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let first = part.first else { return true }
        guard part.count <= text.count else { return false }
        for start in 0...(text.count - part.count) where text[start] == first {
            if UnsafeBufferPointer(rebasing: text[start..<(start + part.count)]).elementsEqual(part) { return true }
        }
        return false
    }

    // MARK: Conversions

    private static func convert(_ function: CELFunction, _ value: CELValue) throws(CELEvaluationError) -> CELValue {
        switch (function, value) {
        case (.int, .int), (.uint, .uint), (.double, .double), (.string, .string), (.bytes, .bytes), (.bool, .bool):
            return value
        case (.int, .uint(let number)):
            guard let converted = Int64(exactly: number) else { throw rangeError("int", value) }
            return .int(converted)
        case (.int, .double(let number)):
            // Go's and the cel-spec's bounds: the double must lie strictly inside int's range.
            guard number.isFinite, number > -9.223372036854775808e18, number < 9.223372036854775808e18 else { throw rangeError("int", value) }
            return .int(Int64(number.rounded(.towardZero)))
        case (.int, .string(let text)):
            guard let converted = Int64(text) else { throw CELEvaluationError(message: "cannot convert \(CELOperations.describe(value)) to int") }
            return .int(converted)
        case (.uint, .int(let number)):
            guard let converted = UInt64(exactly: number) else { throw rangeError("uint", value) }
            return .uint(converted)
        case (.uint, .double(let number)):
            guard number.isFinite, number >= 0, number < 1.8446744073709552e19 else { throw rangeError("uint", value) }
            return .uint(UInt64(number.rounded(.towardZero)))
        case (.uint, .string(let text)):
            // Go's ParseUint: digits only, no sign (Swift's UInt64("+5") would take one).
            guard text.utf8.first.map({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) == true, let converted = UInt64(text) else { throw CELEvaluationError(message: "cannot convert \(CELOperations.describe(value)) to uint") }
            return .uint(converted)
        case (.double, .int(let number)): return .double(Double(number))
        case (.double, .uint(let number)): return .double(Double(number))
        case (.double, .string(let text)):
            guard let converted = CELFormat.parseDouble(text) else {
                throw CELEvaluationError(message: "cannot convert \(CELOperations.describe(value)) to double")
            }
            return .double(converted)
        case (.string, .int(let number)): return .string(String(number))
        case (.string, .uint(let number)): return .string(String(number))
        case (.string, .double(let number)): return .string(CELFormat.double(number))
        case (.string, .bool(let flag)): return .string(flag ? "true" : "false")
        case (.string, .bytes(let bytes)):
            guard let text = String(validating: bytes, as: UTF8.self) else { throw CELEvaluationError(message: "bytes are not UTF-8") }
            return .string(text)
        case (.bytes, .string(let text)): return .bytes(Array(text.utf8))
        case (.bool, .string(let text)):
            switch text {
            case "1", "t", "T", "true", "TRUE", "True": return .bool(true)
            case "0", "f", "F", "false", "FALSE", "False": return .bool(false)
            default: throw CELEvaluationError(message: "cannot convert \(CELOperations.describe(value)) to bool")
            }
        default:
            throw .noOverload(function.rawValue, value)
        }
    }

    private static func rangeError(_ type: String, _ value: CELValue) -> CELEvaluationError {
        CELEvaluationError(message: "\(CELOperations.describe(value)) is out of \(type)'s range")
    }
}
