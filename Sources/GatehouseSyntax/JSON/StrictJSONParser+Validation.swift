extension StrictJSON {
    /// Checks one JSON text as `parse` would, without making its values (the validator's own words in a refusal; a
    /// nesting deeper than 64 levels refused whatever `maxDepth` says).
    package static func validate(_ buffer: UnsafeBufferPointer<UInt8>, maxDepth: Int = 32) throws(StrictJSONError) {
        var parser = StrictJSONParser(input: buffer, maxDepth: maxDepth)
        var names: [String?] = []
        parser.skipWhitespace()
        try parser.validateValue(enclosingDepth: 0, names: &names)
        parser.skipWhitespace()
        guard parser.position == buffer.count else { throw parser.failure("unexpected data after the JSON value") }
    }
}

/// Checking a value without making it: what a reader that needs a few members of a large document (an MCP message's
/// `method` and tool name, not its arguments) uses for the rest.
///
/// Never more lenient than `parseValue`: the same UTF-8, escape, number, literal and depth rules, and a duplicate
/// member name (compared after unescaping, by `String` equality) refused. Its error messages may differ from
/// `StrictJSON`'s and it may refuse more (a nesting deeper than 64 levels): a caller that answers a refusal parses
/// the document again with `StrictJSON` for its words.
extension StrictJSONParser {
    /// The deepest `validateValue` nests (its open containers are bits of one word).
    static let maxValidatedDepth = 64

    /// Checks the value at `position` (at no whitespace), inside `enclosingDepth` containers already open, and moves
    /// just past it. `names` holds the member names of the objects open around it (each object's after a `nil`).
    mutating func validateValue(enclosingDepth: Int, names: inout [String?]) throws(StrictJSONError) {
        // The open containers, innermost in the lowest bit: 1 an object, 0 an array.
        var kinds: UInt64 = 0
        var depth = 0
        validatingValues: while true {
            guard position < input.count else { throw failure("unexpected end of input") }
            switch input[position] {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                let isObject = input[position] == UInt8(ascii: "{")
                guard depth + enclosingDepth < maxDepth, depth < Self.maxValidatedDepth else { throw failure("nesting deeper than \(maxDepth)") }
                position += 1
                skipWhitespace()
                if position < input.count, input[position] == (isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) {
                    position += 1
                } else {
                    kinds = kinds << 1 | (isObject ? 1 : 0)
                    depth += 1
                    if isObject {
                        names.append(nil)
                        names.append(try parseMemberName().name)
                    }
                    continue validatingValues
                }
            case UInt8(ascii: "\""):
                try skipString()
            case UInt8(ascii: "t"):
                try expectLiteral("true")
            case UInt8(ascii: "f"):
                try expectLiteral("false")
            case UInt8(ascii: "n"):
                try expectLiteral("null")
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                _ = try scanNumber()
            default:
                throw failure("unexpected character")
            }

            // A value is complete: close every container that ends here.
            while depth > 0 {
                let isObject = kinds & 1 == 1
                skipWhitespace()
                guard position < input.count else { throw failure("unexpected end of input") }
                let byte = input[position]
                position += 1
                if byte == UInt8(ascii: ",") {
                    skipWhitespace()
                    if isObject { names.append(try parseMemberName().name) }
                    continue validatingValues
                }
                if isObject, byte == UInt8(ascii: "}") {
                    try closeObject(&names)
                } else if isObject || byte != UInt8(ascii: "]") {
                    position -= 1
                    throw failure(isObject ? "expected ',' or '}'" : "expected ',' or ']'")
                }
                kinds >>= 1
                depth -= 1
            }
            return
        }
    }

    /// The innermost open object has closed: its member names (after the last `nil` of `names`) are checked for a
    /// duplicate and dropped.
    mutating func closeObject(_ names: inout [String?]) throws(StrictJSONError) {
        guard let opened = names.lastIndex(where: { $0 == nil }) else { throw failure("unbalanced object") }
        if Self.hasDuplicate(names, from: opened + 1) { throw failure("duplicate member name") }
        // No slice of `names` is alive here: the removal happens in place, without copying the array.
        names.removeSubrange(opened...)
    }

    /// Whether two of `names[start...]` are equal (pairwise for a few, by a set for more: never quadratic in a large
    /// object).
    private static func hasDuplicate(_ names: [String?], from start: Int) -> Bool {
        if names.count - start <= 8 {
            for later in start..<names.count {
                for earlier in start..<later where names[earlier] == names[later] { return true }
            }
            return false
        }
        var seen = Set<String>(minimumCapacity: names.count - start)
        for index in start..<names.count where !seen.insert(names[index] ?? "").inserted { return true }
        return false
    }

    /// Moves past the string at `position` (its opening quote), checked as `parseString` checks it, without making it.
    mutating func skipString() throws(StrictJSONError) {
        position += 1
        while position < input.count {
            let byte = input[position]
            if byte == UInt8(ascii: "\"") {
                position += 1
                return
            }
            if byte == UInt8(ascii: "\\") {
                try skipEscape()
            } else if byte < 0x20 {
                throw failure("unescaped control character in string")
            } else if byte < 0x80 {
                position += 1
            } else {
                try skipUTF8Sequence()
            }
        }
        throw failure("unterminated string")
    }

    /// Moves past one escape (at its backslash), checked as `appendEscape` checks it: surrogates only in pairs.
    private mutating func skipEscape() throws(StrictJSONError) {
        let escapeStart = position
        position += 1
        guard position < input.count else { throw failure("unterminated string") }
        let escaped = input[position]
        position += 1
        switch escaped {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"), UInt8(ascii: "n"),
             UInt8(ascii: "r"), UInt8(ascii: "t"):
            return
        case UInt8(ascii: "u"):
            switch try parseHex4() {
            case 0xD800...0xDBFF:
                guard input.count - position >= 6, input[position] == UInt8(ascii: "\\"), input[position + 1] == UInt8(ascii: "u") else {
                    throw StrictJSONError("lone surrogate in \\u escape", offset: escapeStart)
                }
                position += 2
                guard (0xDC00...0xDFFF).contains(try parseHex4()) else { throw StrictJSONError("lone surrogate in \\u escape", offset: escapeStart) }
            case 0xDC00...0xDFFF:
                throw StrictJSONError("lone surrogate in \\u escape", offset: escapeStart)
            default:
                return
            }
        default:
            position -= 1
            throw failure("invalid escape")
        }
    }
}
