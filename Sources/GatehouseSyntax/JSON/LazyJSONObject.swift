/// A JSON object document read once for its verdict and where its members are, each member's value made only when
/// asked for (issue 57: a token's claims without a dictionary of values, most of which no request reads).
///
/// Exactly as strict as `StrictJSON` (and `StrictJSONObject`), with the same messages at the same offsets: the same
/// UTF-8, escape, number and literal rules, the same depth, a duplicate name (compared after unescaping, by `String`
/// equality) refused once the object has been read. What it keeps per member: the name, and for a string without
/// escapes or a number the bytes' place in the document; `true`, `false`, `null`, a string with escapes and a nested
/// object or array are kept as their value, made while reading (they cost no more than being checked). Looking a
/// member up compares names, in document order: a token's handful of claims, no hashing. `FuzzClaimsReader` holds it
/// to `StrictJSON`'s verdicts and values.
public struct LazyJSONObject: Sendable {
    /// The document's bytes, which the members' places point into.
    public let document: [UInt8]
    private let members: [Member]

    fileprivate struct Member: Sendable {
        let name: String
        /// Where the name's quote is, for the duplicate-name error.
        let offset: Int
        let value: Place
    }

    fileprivate enum Place: Sendable {
        /// A string without escapes: its bytes, between the quotes.
        case string(Range<Int>)
        /// A number's literal.
        case number(Range<Int>)
        case value(JSONValue)
    }

    /// `{}`.
    public static let empty = LazyJSONObject(document: [], members: [])

    /// The object `document` holds; nil when it holds valid JSON that is not an object.
    /// - Throws: `StrictJSONError` when it is not valid JSON, as `StrictJSON.parse` would.
    public static func read(_ document: [UInt8], maxDepth: Int = 32) throws(StrictJSONError) -> LazyJSONObject? {
        let members = try document.withUnsafeBufferPointer { (buffer) throws(StrictJSONError) -> [Member]? in
            var parser = StrictJSONParser(input: buffer, maxDepth: maxDepth)
            parser.skipWhitespace()
            guard maxDepth >= 1, parser.position < buffer.count, buffer[parser.position] == UInt8(ascii: "{") else {
                // Not an object, or not JSON at all: StrictJSON says which, in its own words.
                _ = try StrictJSON.parse(buffer: buffer, maxDepth: maxDepth)
                return nil
            }
            return try parser.indexObjectMembers()
        }
        guard let members else { return nil }
        return LazyJSONObject(document: document, members: members)
    }

    /// The member named `name` (compared as `String`s compare, as a dictionary's keys are), made now.
    public subscript(name: String) -> JSONValue? {
        guard let member = members.first(where: { $0.name == name }) else { return nil }
        return value(of: member.value)
    }

    /// `body` given the bytes of the member `name` when it is a string written without escapes (its text, UTF-8, as
    /// the value would hold it), without making a `String`; nil when the member is absent, not a string, or has
    /// escapes (read those with the subscript). Names are compared as the subscript compares them.
    public func withPlainString<Result>(_ name: String, _ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result? {
        guard let member = members.first(where: { $0.name == name }), case .string(let range) = member.value else { return nil }
        return document.withUnsafeBufferPointer { body(UnsafeBufferPointer(rebasing: $0[range])) }
    }

    /// `body` given the text of the member `name` when it is a string written without escapes or a number (the bytes
    /// of its literal), without making a value; nil when the member is absent or anything else.
    public func withPlainText<Result>(_ name: String, _ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result? {
        guard let member = members.first(where: { $0.name == name }) else { return nil }
        switch member.value {
        case .string(let range), .number(let range):
            return document.withUnsafeBufferPointer { body(UnsafeBufferPointer(rebasing: $0[range])) }
        case .value:
            return nil
        }
    }

    /// How many members the object has.
    public var count: Int { members.count }

    /// The members' names, in document order.
    public var names: [String] { members.map(\.name) }

    /// Every member, made now: the object as `StrictJSON` reads it.
    public var dictionary: [String: JSONValue] {
        var object = [String: JSONValue](minimumCapacity: members.count)
        for member in members { object[member.name] = value(of: member.value) }
        return object
    }

    private func value(of place: Place) -> JSONValue {
        switch place {
        case .string(let range): .string(text(range))
        case .number(let range): .number(text(range))
        case .value(let value): value
        }
    }

    /// Bytes the reader checked: valid UTF-8, so decoding them repairs nothing.
    private func text(_ range: Range<Int>) -> String {
        document.withUnsafeBufferPointer { String(decoding: UnsafeBufferPointer(rebasing: $0[range]), as: UTF8.self) }
    }
}

extension StrictJSONParser {
    /// Members held without hashing their names: past this many, duplicates are looked for with a set.
    private static let pairwiseDuplicateLimit = 16

    /// The object at `position` (its `{`) as the whole document: `readObjectMembers`, keeping places instead of values.
    fileprivate mutating func indexObjectMembers() throws(StrictJSONError) -> [LazyJSONObject.Member] {
        position += 1
        skipWhitespace()
        var members: [LazyJSONObject.Member] = []
        if position < input.count, input[position] == UInt8(ascii: "}") {
            position += 1
        } else {
            members.reserveCapacity(12)
            readingMembers: while true {
                let member = try parseMemberName()
                members.append(LazyJSONObject.Member(name: member.name, offset: member.offset, value: try indexMemberValue()))
                if try closesObjectAfterMember() { break readingMembers }
            }
        }
        // StrictJSON refuses a duplicate when the object closes: a later syntax error is reported first.
        if let duplicate = Self.firstRepeatedName(members) {
            throw duplicateName(Member(name: members[duplicate].name, offset: members[duplicate].offset, value: .null))
        }
        skipWhitespace()
        guard position == input.count else { throw failure("unexpected data after the JSON value") }
        return members
    }

    /// The first member whose name an earlier member has (the one a dictionary built in order would find).
    private static func firstRepeatedName(_ members: [LazyJSONObject.Member]) -> Int? {
        if members.count <= pairwiseDuplicateLimit {
            for later in members.indices.dropFirst() where members[..<later].contains(where: { $0.name == members[later].name }) {
                return later
            }
            return nil
        }
        var seen = Set<String>(minimumCapacity: members.count)
        return members.indices.first { !seen.insert(members[$0].name).inserted }
    }

    /// A member's value, checked as `parseMemberValue` checks it: a place for a plain string or a number, else the value.
    private mutating func indexMemberValue() throws(StrictJSONError) -> LazyJSONObject.Place {
        guard position < input.count else { throw failure("unexpected end of input") }
        switch input[position] {
        case UInt8(ascii: "\""):
            if let range = try skipPlainString() { return .string(range) }
            return .value(.string(try parseString()))
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return .number(try scanNumber())
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return .value(.bool(true))
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return .value(.bool(false))
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return .value(.null)
        default:
            return .value(try parseValue(enclosingDepth: 1))
        }
    }

    /// Moves past the string at `position` (its opening quote) when it has no escape, checked as `parseString` checks
    /// it, and returns its bytes between the quotes. At an escape it moves back to the opening quote and returns nil:
    /// `parseString` reads it (and judges the rest).
    private mutating func skipPlainString() throws(StrictJSONError) -> Range<Int>? {
        let quote = position
        position += 1
        while position < input.count {
            let byte = input[position]
            if byte == UInt8(ascii: "\"") {
                position += 1
                return (quote + 1)..<(position - 1)
            }
            if byte == UInt8(ascii: "\\") {
                position = quote
                return nil
            }
            if byte < 0x20 { throw failure("unescaped control character in string") }
            if byte < 0x80 {
                position += 1
            } else {
                try skipUTF8Sequence()
            }
        }
        throw failure("unterminated string")
    }
}
