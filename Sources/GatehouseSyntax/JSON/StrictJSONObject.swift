/// A JSON object's members read in one pass, the way a token's header and claims are: each
/// top-level member goes straight into the dictionary as it is read, its scalar values made from the
/// bytes in place; only a nested object or array is handed to `StrictJSON`'s parser. No stack of
/// members, no second walk to build the object, no tree for a flat payload.
///
/// Exactly as strict as `StrictJSON`, with its pieces and its messages: the same UTF-8, escape,
/// number and literal rules, the same depth (the object is level 1), and a duplicate name (compared
/// after unescaping, by `String` equality) refused as `StrictJSON` refuses it, once the object has
/// been read. `FuzzClaimsReader` holds the two to the same verdicts and values.
public enum StrictJSONObject {
    /// The members of the object `buffer` holds; nil when it holds valid JSON that is not an object.
    /// - Throws: `StrictJSONError` when it is not valid JSON, as `StrictJSON.parse` would.
    public static func members(of buffer: UnsafeBufferPointer<UInt8>, maxDepth: Int = 32) throws(StrictJSONError) -> [String: JSONValue]? {
        var parser = StrictJSONParser(input: buffer, maxDepth: maxDepth)
        parser.skipWhitespace()
        guard maxDepth >= 1, parser.position < buffer.count, buffer[parser.position] == UInt8(ascii: "{") else {
            // Not an object, or not JSON at all: StrictJSON says which, in its own words.
            return try StrictJSON.parse(buffer: buffer, maxDepth: maxDepth).objectValue
        }
        return try parser.readObjectMembers()
    }
}

extension StrictJSONParser {
    /// A typical token's claims fit without the dictionary growing.
    private static let expectedMemberCount = 12

    /// The object at `position` (its `{`) as the whole document.
    mutating func readObjectMembers() throws(StrictJSONError) -> [String: JSONValue] {
        position += 1
        skipWhitespace()
        var members: [String: JSONValue] = [:]
        var duplicate: StrictJSONError?
        if position < input.count, input[position] == UInt8(ascii: "}") {
            position += 1
        } else {
            members.reserveCapacity(Self.expectedMemberCount)
            readingMembers: while true {
                let member = try parseMemberName()
                let value = try parseMemberValue()
                if members.updateValue(value, forKey: member.name) != nil, duplicate == nil {
                    duplicate = duplicateName(member)
                }
                if try closesObjectAfterMember() { break readingMembers }
            }
        }
        // StrictJSON refuses a duplicate when the object closes: a later syntax error is reported first.
        if let duplicate { throw duplicate }
        skipWhitespace()
        guard position == input.count else { throw failure("unexpected data after the JSON value") }
        return members
    }

    /// What follows a member: `,` and the next member (false), or the object's `}` (true).
    mutating func closesObjectAfterMember() throws(StrictJSONError) -> Bool {
        skipWhitespace()
        guard position < input.count else { throw failure("unexpected end of input") }
        let byte = input[position]
        position += 1
        switch byte {
        case UInt8(ascii: ","):
            skipWhitespace()
            return false
        case UInt8(ascii: "}"):
            return true
        default:
            position -= 1
            throw failure("expected ',' or '}'")
        }
    }

    /// A member's value: scalars read here, containers (and what is no value) by the parser, one level down.
    private mutating func parseMemberValue() throws(StrictJSONError) -> JSONValue {
        guard position < input.count else { throw failure("unexpected end of input") }
        switch input[position] {
        case UInt8(ascii: "\""):
            return .string(try parseString())
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return .number(try parseNumber())
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return .null
        default:
            return try parseValue(enclosingDepth: 1)
        }
    }
}
