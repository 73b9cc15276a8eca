/// A strict RFC 8259 JSON parser for untrusted token headers, payloads and key sets.
///
/// Strict where lenient parsers differ from each other, because a token that two parsers read
/// differently is a token an attacker can shape for one of them:
/// - only well-formed UTF-8 (no overlong forms, no UTF-8-encoded surrogates, nothing above U+10FFFF);
/// - `\u` escapes must pair surrogates correctly; a lone surrogate is an error;
/// - duplicate member names in one object are an error (compared after unescaping), never "last wins";
/// - no comments, no trailing commas, no leading zeros, no `NaN`, nothing after the value but whitespace.
///
/// Nesting is tracked on a heap-allocated stack rather than by recursion, so even a document nested
/// far deeper than `maxDepth` fails with an error instead of exhausting the thread's stack.
public enum StrictJSON {
    /// Parses one JSON text.
    /// - Parameters:
    ///   - bytes: The document, which must be UTF-8.
    ///   - maxDepth: How many arrays/objects may be nested inside each other (a flat object is depth 1).
    @inlinable public static func parse(_ bytes: some Collection<UInt8>, maxDepth: Int = 32) throws(StrictJSONError) -> JSONValue {
        let result = bytes.withContiguousStorageIfAvailable { buffer in parseResult(buffer, maxDepth: maxDepth) }
        if let result { return try result.get() }
        return try Array(bytes).withUnsafeBufferPointer { parseResult($0, maxDepth: maxDepth) }.get()
    }

    public static func parse(buffer: UnsafeBufferPointer<UInt8>, maxDepth: Int = 32) throws(StrictJSONError) -> JSONValue {
        var parser = StrictJSONParser(input: buffer, maxDepth: maxDepth)
        return try parser.parseDocument()
    }

    @usableFromInline static func parseResult(_ buffer: UnsafeBufferPointer<UInt8>, maxDepth: Int) -> Result<JSONValue, StrictJSONError> {
        do {
            return .success(try parse(buffer: buffer, maxDepth: maxDepth))
        } catch {
            return .failure(error)
        }
    }
}

/// The parsing state machine behind `StrictJSON` (and `StrictJSONObject`, which reads a top-level
/// object's members with its pieces).
///
/// Open containers are frames on one stack; their elements and members accumulate on two shared
/// stacks that are reused from container to container, so parsing allocates little beyond the values
/// themselves. An object's dictionary is built once, at its closing brace, at its final size.
struct StrictJSONParser {
    let input: UnsafeBufferPointer<UInt8>
    let maxDepth: Int
    var position = 0

    private struct Frame {
        let isObject: Bool
        /// Where this container's entries begin in `members` or `elements`.
        let start: Int
    }

    struct Member {
        let name: String
        /// Offset of the name, for the duplicate-name error.
        let offset: Int
        var value: JSONValue
    }

    init(input: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
        self.input = input
        self.maxDepth = maxDepth
    }

    mutating func parseDocument() throws(StrictJSONError) -> JSONValue {
        skipWhitespace()
        let value = try parseValue(enclosingDepth: 0)
        skipWhitespace()
        guard position == input.count else { throw failure("unexpected data after the JSON value") }
        return value
    }

    /// One value starting at `position` (at no whitespace), inside `enclosingDepth` containers already
    /// open; leaves `position` just after it.
    mutating func parseValue(enclosingDepth: Int) throws(StrictJSONError) -> JSONValue {
        var frames: [Frame] = []
        var members: [Member] = []
        var elements: [JSONValue] = []
        // Room for a typical token header or payload, so the stacks do not regrow while parsing one.
        frames.reserveCapacity(8)
        members.reserveCapacity(32)

        parsingValues: while true {
            var value: JSONValue
            guard position < input.count else { throw failure("unexpected end of input") }
            switch input[position] {
            case UInt8(ascii: "{"):
                guard frames.count + enclosingDepth < maxDepth else { throw failure("nesting deeper than \(maxDepth)") }
                position += 1
                skipWhitespace()
                if position < input.count, input[position] == UInt8(ascii: "}") {
                    position += 1
                    value = .object([:])
                } else {
                    frames.append(Frame(isObject: true, start: members.count))
                    members.append(try parseMemberName())
                    continue parsingValues
                }
            case UInt8(ascii: "["):
                guard frames.count + enclosingDepth < maxDepth else { throw failure("nesting deeper than \(maxDepth)") }
                position += 1
                skipWhitespace()
                if position < input.count, input[position] == UInt8(ascii: "]") {
                    position += 1
                    value = .array([])
                } else {
                    frames.append(Frame(isObject: false, start: elements.count))
                    continue parsingValues
                }
            case UInt8(ascii: "\""):
                value = .string(try parseString())
            case UInt8(ascii: "t"):
                try expectLiteral("true")
                value = .bool(true)
            case UInt8(ascii: "f"):
                try expectLiteral("false")
                value = .bool(false)
            case UInt8(ascii: "n"):
                try expectLiteral("null")
                value = .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                value = .number(try parseNumber())
            default:
                throw failure("unexpected character")
            }

            // A value is complete: store it in its container and close every container that ends here.
            while let frame = frames.last {
                if frame.isObject {
                    members[members.count - 1].value = value
                } else {
                    elements.append(value)
                }
                skipWhitespace()
                guard position < input.count else { throw failure("unexpected end of input") }
                let byte = input[position]
                position += 1
                if byte == UInt8(ascii: ",") {
                    skipWhitespace()
                    if frame.isObject { members.append(try parseMemberName()) }
                    continue parsingValues
                }
                if frame.isObject, byte == UInt8(ascii: "}") {
                    value = .object(try makeObject(members[frame.start...]))
                    members.removeSubrange(frame.start...)
                } else if !frame.isObject, byte == UInt8(ascii: "]") {
                    value = .array(Array(elements[frame.start...]))
                    elements.removeSubrange(frame.start...)
                } else {
                    position -= 1
                    throw failure(frame.isObject ? "expected ',' or '}'" : "expected ',' or ']'")
                }
                frames.removeLast()
            }
            return value
        }
    }

    /// Builds an object's dictionary, refusing duplicate names. Swift compares strings by canonical
    /// equivalence, so two spellings of the same text also collide here; refusing them is the safe
    /// answer since one of them could not be represented.
    private func makeObject(_ members: ArraySlice<Member>) throws(StrictJSONError) -> [String: JSONValue] {
        var object = [String: JSONValue](minimumCapacity: members.count)
        for member in members where object.updateValue(member.value, forKey: member.name) != nil {
            throw duplicateName(member)
        }
        return object
    }

    /// The error for a member whose name an earlier member of its object has.
    func duplicateName(_ member: Member) -> StrictJSONError {
        StrictJSONError("duplicate member name \"\(String(member.name.prefix(64)))\"", offset: member.offset)
    }

    /// Parses `"name"` and the colon after it; the value is filled in once parsed.
    mutating func parseMemberName() throws(StrictJSONError) -> Member {
        guard position < input.count, input[position] == UInt8(ascii: "\"") else { throw failure("expected a member name") }
        let offset = position
        let name = try parseString()
        skipWhitespace()
        guard position < input.count, input[position] == UInt8(ascii: ":") else { throw failure("expected ':'") }
        position += 1
        skipWhitespace()
        return Member(name: name, offset: offset, value: .null)
    }

    mutating func skipWhitespace() {
        while position < input.count {
            switch input[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    mutating func expectLiteral(_ literal: StaticString) throws(StrictJSONError) {
        let count = literal.utf8CodeUnitCount
        guard input.count - position >= count else { throw failure("invalid literal") }
        let bytes = literal.utf8Start
        for offset in 0..<count where input[position + offset] != bytes[offset] {
            throw failure("invalid literal")
        }
        position += count
    }

    mutating func parseNumber() throws(StrictJSONError) -> String {
        let range = try scanNumber()
        return String(decoding: UnsafeBufferPointer(rebasing: input[range]), as: UTF8.self)
    }

    /// Moves past the number at `position`, checked as `parseNumber` checks it; returns where it is.
    mutating func scanNumber() throws(StrictJSONError) -> Range<Int> {
        let start = position
        if input[position] == UInt8(ascii: "-") { position += 1 }
        guard position < input.count, isDigit(input[position]) else { throw failure("invalid number") }
        if input[position] == UInt8(ascii: "0") {
            position += 1
            if position < input.count, isDigit(input[position]) { throw failure("number with a leading zero") }
        } else {
            skipDigits()
        }
        if position < input.count, input[position] == UInt8(ascii: ".") {
            position += 1
            guard position < input.count, isDigit(input[position]) else { throw failure("invalid number") }
            skipDigits()
        }
        if position < input.count, input[position] | 0x20 == UInt8(ascii: "e") {
            position += 1
            if position < input.count, input[position] == UInt8(ascii: "+") || input[position] == UInt8(ascii: "-") {
                position += 1
            }
            guard position < input.count, isDigit(input[position]) else { throw failure("invalid number") }
            skipDigits()
        }
        return start..<position
    }

    private func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    private mutating func skipDigits() {
        while position < input.count, isDigit(input[position]) { position += 1 }
    }

    /// Parses a string starting at its opening quote. Strings without escapes (nearly all of them in
    /// a token) are validated in place and copied once.
    mutating func parseString() throws(StrictJSONError) -> String {
        position += 1
        let start = position
        while position < input.count {
            let byte = input[position]
            if byte == UInt8(ascii: "\"") {
                let text = String(decoding: UnsafeBufferPointer(rebasing: input[start..<position]), as: UTF8.self)
                position += 1
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw failure("unescaped control character in string") }
            if byte < 0x80 {
                position += 1
            } else {
                try skipUTF8Sequence()
            }
        }
        guard position < input.count else { throw failure("unterminated string") }

        var bytes: [UInt8] = []
        bytes.reserveCapacity(position - start + 16)
        bytes.append(contentsOf: UnsafeBufferPointer(rebasing: input[start..<position]))
        while position < input.count {
            let byte = input[position]
            if byte == UInt8(ascii: "\"") {
                position += 1
                return String(decoding: bytes, as: UTF8.self)
            }
            if byte == UInt8(ascii: "\\") {
                try appendEscape(to: &bytes)
            } else if byte < 0x20 {
                throw failure("unescaped control character in string")
            } else if byte < 0x80 {
                bytes.append(byte)
                position += 1
            } else {
                let sequenceStart = position
                try skipUTF8Sequence()
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: input[sequenceStart..<position]))
            }
        }
        throw failure("unterminated string")
    }

    /// Validates one multi-byte UTF-8 sequence (RFC 3629 §4) and moves past it.
    mutating func skipUTF8Sequence() throws(StrictJSONError) {
        let lead = input[position]
        let continuationCount: Int
        var secondLow: UInt8 = 0x80
        var secondHigh: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: continuationCount = 1
        case 0xE0: continuationCount = 2; secondLow = 0xA0           // excludes overlong forms
        case 0xE1...0xEC, 0xEE...0xEF: continuationCount = 2
        case 0xED: continuationCount = 2; secondHigh = 0x9F          // excludes surrogates
        case 0xF0: continuationCount = 3; secondLow = 0x90           // excludes overlong forms
        case 0xF1...0xF3: continuationCount = 3
        case 0xF4: continuationCount = 3; secondHigh = 0x8F          // nothing above U+10FFFF
        default: throw failure("invalid UTF-8")
        }
        guard input.count - position > continuationCount else { throw failure("invalid UTF-8") }
        let second = input[position + 1]
        guard second >= secondLow, second <= secondHigh else { throw failure("invalid UTF-8") }
        for offset in stride(from: 2, through: continuationCount, by: 1) where input[position + offset] & 0xC0 != 0x80 {
            throw failure("invalid UTF-8")
        }
        position += continuationCount + 1
    }

    private mutating func appendEscape(to bytes: inout [UInt8]) throws(StrictJSONError) {
        position += 1
        guard position < input.count else { throw failure("unterminated string") }
        let escaped = input[position]
        position += 1
        switch escaped {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): bytes.append(escaped)
        case UInt8(ascii: "b"): bytes.append(0x08)
        case UInt8(ascii: "f"): bytes.append(0x0C)
        case UInt8(ascii: "n"): bytes.append(0x0A)
        case UInt8(ascii: "r"): bytes.append(0x0D)
        case UInt8(ascii: "t"): bytes.append(0x09)
        case UInt8(ascii: "u"):
            let escapeStart = position - 2
            let unit = try parseHex4()
            var scalar = unit
            switch unit {
            case 0xD800...0xDBFF:
                guard input.count - position >= 6, input[position] == UInt8(ascii: "\\"), input[position + 1] == UInt8(ascii: "u") else {
                    throw StrictJSONError("lone surrogate in \\u escape", offset: escapeStart)
                }
                position += 2
                let low = try parseHex4()
                guard (0xDC00...0xDFFF).contains(low) else { throw StrictJSONError("lone surrogate in \\u escape", offset: escapeStart) }
                scalar = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
            case 0xDC00...0xDFFF:
                throw StrictJSONError("lone surrogate in \\u escape", offset: escapeStart)
            default:
                break
            }
            appendUTF8(scalar, to: &bytes)
        default:
            position -= 1
            throw failure("invalid escape")
        }
    }

    mutating func parseHex4() throws(StrictJSONError) -> UInt32 {
        guard input.count - position >= 4 else { throw failure("invalid \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = input[position]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw failure("invalid \\u escape")
            }
            value = value << 4 | UInt32(digit)
            position += 1
        }
        return value
    }

    private func appendUTF8(_ scalar: UInt32, to bytes: inout [UInt8]) {
        switch scalar {
        case 0..<0x80:
            bytes.append(UInt8(scalar))
        case 0x80..<0x800:
            bytes.append(UInt8(0xC0 | scalar >> 6))
            bytes.append(UInt8(0x80 | scalar & 0x3F))
        case 0x800..<0x10000:
            bytes.append(UInt8(0xE0 | scalar >> 12))
            bytes.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            bytes.append(UInt8(0x80 | scalar & 0x3F))
        default:
            bytes.append(UInt8(0xF0 | scalar >> 18))
            bytes.append(UInt8(0x80 | scalar >> 12 & 0x3F))
            bytes.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            bytes.append(UInt8(0x80 | scalar & 0x3F))
        }
    }

    func failure(_ message: String) -> StrictJSONError {
        StrictJSONError(message, offset: position)
    }
}
