/// CEL's operators on values (cel-spec langdef "Operators", "Equality", "Numeric values"): heterogeneous numeric
/// equality and ordering, checked integer arithmetic, indexing, `in`.
enum CELOperations {
    // MARK: Equality and ordering

    /// `==`: numbers by value across int, uint and double; strings and bytes byte for byte; lists element-wise;
    /// maps entry-wise; values of different kinds are unequal (never an error).
    static func equal(_ lhs: CELValue, _ rhs: CELValue) -> Bool {
        if let order = numericOrder(lhs, rhs) { return order == 0 }
        switch (lhs, rhs) {
        case (.null, .null): return true
        case (.bool(let a), .bool(let b)): return a == b
        case (.string(let a), .string(let b)): return a.utf8.elementsEqual(b.utf8)
        case (.bytes(let a), .bytes(let b)): return a == b
        case (.type(let a), .type(let b)): return a == b
        case (.list(let a), .list(let b)):
            guard a.count == b.count else { return false }
            for position in 0..<a.count where !equal(a[position], b[position]) { return false }
            return true
        case (.map(let a), .map(let b)):
            guard a.count == b.count else { return false }
            for key in a.keys {
                guard let left = a.value(at: key), let right = b.value(at: key), equal(left, right) else { return false }
            }
            return true
        default:
            return false
        }
    }

    /// -1, 0 or 1 for two numbers of any numeric kinds; nil when either is not a number or either is NaN.
    static func numericOrder(_ lhs: CELValue, _ rhs: CELValue) -> Int? {
        switch (lhs, rhs) {
        case (.int(let a), .int(let b)): return compare(a, b)
        case (.uint(let a), .uint(let b)): return compare(a, b)
        case (.double(let a), .double(let b)):
            return a.isNaN || b.isNaN ? nil : compare(a, b)
        case (.int(let a), .uint(let b)): return a < 0 ? -1 : compare(UInt64(a), b)
        case (.uint(let a), .int(let b)): return b < 0 ? 1 : compare(a, UInt64(b))
        case (.int(let a), .double(let b)): return b.isNaN ? nil : compareInteger(Double(a), exact: Int64(exactly: b).map { compare(a, $0) }, b)
        case (.double(let a), .int(let b)): return numericOrder(.int(b), .double(a)).map { -$0 }
        case (.uint(let a), .double(let b)): return b.isNaN ? nil : compareInteger(Double(a), exact: UInt64(exactly: b).map { compare(a, $0) }, b)
        case (.double(let a), .uint(let b)): return numericOrder(.uint(b), .double(a)).map { -$0 }
        default: return nil
        }
    }

    /// An integer against a double: exactly when the double is an integer in range, else by the integer as a double.
    private static func compareInteger(_ approximate: Double, exact: Int?, _ other: Double) -> Int {
        exact ?? compare(approximate, other)
    }

    private static func compare<T: Comparable>(_ a: T, _ b: T) -> Int { a < b ? -1 : (a == b ? 0 : 1) }

    static func order(_ ordering: CELOrdering, _ lhs: CELValue, _ rhs: CELValue) throws(CELEvaluationError) -> Bool {
        let result: Int
        if case .double = lhs, case .double(let b) = rhs, b.isNaN { return false }
        if let numeric = numericOrder(lhs, rhs) {
            result = numeric
        } else {
            switch (lhs, rhs) {
            case (.double(let a), _) where a.isNaN && isNumber(rhs): return false
            case (_, .double(let b)) where b.isNaN && isNumber(lhs): return false
            case (.string(let a), .string(let b)):
                result = a.utf8.elementsEqual(b.utf8) ? 0 : (a.utf8.lexicographicallyPrecedes(b.utf8) ? -1 : 1)
            case (.bytes(let a), .bytes(let b)):
                result = a == b ? 0 : (a.lexicographicallyPrecedes(b) ? -1 : 1)
            case (.bool(let a), .bool(let b)):
                result = a == b ? 0 : (!a ? -1 : 1)
            default:
                throw .noOverload(ordering.rawValue, lhs, rhs)
            }
        }
        switch ordering {
        case .less: return result < 0
        case .lessOrEqual: return result <= 0
        case .greater: return result > 0
        case .greaterOrEqual: return result >= 0
        }
    }

    static func isNumber(_ value: CELValue) -> Bool {
        switch value {
        case .int, .uint, .double: true
        default: false
        }
    }

    // MARK: Collections

    /// `element in collection`: a list holding an equal element, a map holding the key.
    static func contains(_ collection: CELValue, _ element: CELValue) throws(CELEvaluationError) -> Bool {
        switch collection {
        case .list(let list):
            for position in 0..<list.count where equal(list[position], element) { return true }
            return false
        case .map(let map):
            return map.value(at: element) != nil
        default:
            throw .noOverload("in", element, collection)
        }
    }

    /// `operand[index]`: a list by an integral number, a map by key.
    static func index(_ operand: CELValue, _ index: CELValue) throws(CELEvaluationError) -> CELValue {
        switch operand {
        case .list(let list):
            let position: Int64?
            switch index {
            case .int(let value): position = value
            case .uint(let value): position = Int64(exactly: value)
            case .double(let value): position = Int64(exactly: value)
            default: throw .noOverload("[]", operand, index)
            }
            guard let position, position >= 0, position < list.count else {
                throw CELEvaluationError(message: "index out of range: \(describe(index)) of a list of \(list.count)")
            }
            return list[Int(position)]
        case .map(let map):
            guard let value = map.value(at: index) else { throw CELEvaluationError(message: "no such key: \(describe(index))") }
            return value
        default:
            throw .noOverload("[]", operand, index)
        }
    }

    /// A short rendering of a key or index for an error message (never the whole of a long value).
    static func describe(_ value: CELValue) -> String {
        switch value {
        case .int(let number): String(number)
        case .uint(let number): "\(number)u"
        case .double(let number): String(number)
        case .string(let text): "'" + String(text.unicodeScalars.prefix(64).map(Character.init)) + "'"
        case .bool(let flag): String(flag)
        default: value.type.rawValue
        }
    }

    // MARK: Arithmetic

    static func negate(_ value: CELValue) throws(CELEvaluationError) -> CELValue {
        switch value {
        case .int(let number):
            guard number != .min else { throw CELEvaluationError(message: "int overflow") }
            return .int(-number)
        case .double(let number): return .double(-number)
        default: throw .noOverload("-", value)
        }
    }

    static func arithmetic(_ operation: CELArithmetic, _ lhs: CELValue, _ rhs: CELValue) throws(CELEvaluationError) -> CELValue {
        switch (lhs, rhs) {
        case (.int(let a), .int(let b)):
            return .int(try integer(operation, a, b))
        case (.uint(let a), .uint(let b)):
            return .uint(try integer(operation, a, b))
        case (.double(let a), .double(let b)):
            switch operation {
            case .add: return .double(a + b)
            case .subtract: return .double(a - b)
            case .multiply: return .double(a * b)
            case .divide: return .double(a / b)
            case .remainder: throw .noOverload("%", lhs, rhs)
            }
        case (.string(let a), .string(let b)) where operation == .add:
            return .string(a + b)
        case (.bytes(let a), .bytes(let b)) where operation == .add:
            return .bytes(a + b)
        case (.list(let a), .list(let b)) where operation == .add:
            var joined: [CELValue] = []
            joined.reserveCapacity(a.count + b.count)
            for position in 0..<a.count { joined.append(a[position]) }
            for position in 0..<b.count { joined.append(b[position]) }
            return .list(.values(joined))
        default:
            throw .noOverload(operation.rawValue, lhs, rhs)
        }
    }

    /// Checked arithmetic: an overflow, a division or remainder by zero is an error, never a wrap or a trap.
    private static func integer<T: FixedWidthInteger>(_ operation: CELArithmetic, _ a: T, _ b: T) throws(CELEvaluationError) -> T {
        let result: (partialValue: T, overflow: Bool)
        switch operation {
        case .add: result = a.addingReportingOverflow(b)
        case .subtract: result = a.subtractingReportingOverflow(b)
        case .multiply: result = a.multipliedReportingOverflow(by: b)
        case .divide:
            guard b != 0 else { throw CELEvaluationError(message: "division by zero") }
            result = a.dividedReportingOverflow(by: b)
        case .remainder:
            guard b != 0 else { throw CELEvaluationError(message: "modulus by zero") }
            result = a.remainderReportingOverflow(dividingBy: b)
        }
        guard !result.overflow else { throw CELEvaluationError(message: "\(T.isSigned ? "int" : "uint") overflow") }
        return result.partialValue
    }

    // MARK: Cost

    /// Reading a string or bytes operand; a collection's elements one unit each.
    static func comparisonCost(_ lhs: CELValue, _ rhs: CELValue) -> Int {
        min(length(lhs), length(rhs))
    }

    static func joinCost(_ lhs: CELValue, _ rhs: CELValue, _ operation: CELArithmetic) -> Int {
        operation == .add ? length(lhs) + length(rhs) : 0
    }

    /// A value's cost to read: strings and bytes a unit per 64 bytes, collections a unit per element.
    static func length(_ value: CELValue) -> Int {
        switch value {
        case .string(let text): text.utf8.count / 64
        case .bytes(let bytes): bytes.count / 64
        case .list(let list): list.count
        case .map(let map): map.costLength
        default: 0
        }
    }
}
