/// CEL's lexical grammar (cel-spec langdef "Syntax"): numbers, every quoting of strings and bytes, identifiers,
/// operators, `//` comments. Works on Unicode scalars; positions count them.
struct CELLexer {
    private let text: [Unicode.Scalar]
    private var offset = 0

    /// Words the grammar reserves: never an identifier.
    static let reservedWords: Set<String> = [
        "as", "break", "const", "continue", "else", "for", "function", "if", "import", "let", "loop", "package", "namespace",
        "return", "var", "void", "while",
    ]

    init(_ source: String) {
        text = Array(source.unicodeScalars)
    }

    /// Every token with its position, ending with `.end`.
    static func tokens(_ source: String) throws(CELCompileError) -> [(token: CELToken, at: Int)] {
        var lexer = CELLexer(source)
        var result: [(CELToken, Int)] = []
        while true {
            lexer.skipSpaceAndComments()
            let at = lexer.offset
            let token = try lexer.next()
            result.append((token, at))
            if token == .end { return result }
        }
    }

    private func peek(_ ahead: Int = 0) -> Unicode.Scalar? {
        offset + ahead < text.count ? text[offset + ahead] : nil
    }

    private mutating func skipSpaceAndComments() {
        while let scalar = peek() {
            if [" ", "\t", "\n", "\r", "\u{0C}"].contains(scalar) {
                offset += 1
            } else if scalar == "/", peek(1) == "/" {
                while let next = peek(), next != "\n" { offset += 1 }
            } else {
                return
            }
        }
    }

    private func error(_ message: String, at position: Int? = nil) -> CELCompileError {
        CELCompileError(message: message, position: position ?? offset)
    }

    private mutating func next() throws(CELCompileError) -> CELToken {
        guard let scalar = peek() else { return .end }
        if Self.isDigit(scalar) || (scalar == "." && peek(1).map(Self.isDigit) == true) { return try number() }
        if let quoted = try quotedLiteral() { return quoted }
        if Self.isIdentifierStart(scalar) {
            let start = offset
            while let next = peek(), Self.isIdentifierStart(next) || Self.isDigit(next) { offset += 1 }
            let word = String(String.UnicodeScalarView(text[start..<offset]))
            if Self.reservedWords.contains(word) { throw error("\(word) is a reserved word", at: start) }
            return .identifier(word)
        }
        for symbol in ["==", "!=", "<=", ">=", "&&", "||"] where peek() == symbol.unicodeScalars.first && peek(1) == symbol.unicodeScalars.last {
            offset += 2
            return .symbol(symbol)
        }
        if "<>!+-*/%?:.,()[]{}".unicodeScalars.contains(scalar) {
            offset += 1
            return .symbol(String(scalar))
        }
        throw error("unexpected character \(scalar.escaped(asASCII: true))")
    }

    // MARK: Numbers

    private mutating func number() throws(CELCompileError) -> CELToken {
        let start = offset
        if peek() == "0", peek(1) == "x" {  // the grammar has only the lower-case 0x
            offset += 2
            let digitsStart = offset
            while let next = peek(), next.properties.isASCIIHexDigit { offset += 1 }
            let digits = String(String.UnicodeScalarView(text[digitsStart..<offset]))
            guard let magnitude = UInt64(digits, radix: 16) else { throw error("hexadecimal literal out of range or empty", at: start) }
            return try integer(magnitude, start: start)
        }
        var isDouble = false
        while let next = peek(), Self.isDigit(next) { offset += 1 }
        if peek() == ".", let after = peek(1), Self.isDigit(after) {
            isDouble = true
            offset += 1
            while let next = peek(), Self.isDigit(next) { offset += 1 }
        }
        if peek() == "e" || peek() == "E" {
            var look = 1
            if peek(1) == "+" || peek(1) == "-" { look = 2 }
            if let digit = peek(look), Self.isDigit(digit) {
                isDouble = true
                offset += look
                while let next = peek(), Self.isDigit(next) { offset += 1 }
            }
        }
        let literal = String(String.UnicodeScalarView(text[start..<offset]))
        if isDouble {
            guard let value = Double(literal) else { throw error("bad number \(literal)", at: start) }
            return .double(value)
        }
        guard let magnitude = UInt64(literal) else { throw error("integer literal \(literal) out of range", at: start) }
        return try integer(magnitude, start: start)
    }

    /// An integer's digits read: a `u` suffix makes it a uint; else it must fit `int` (or be 2^63, for a minus).
    private mutating func integer(_ magnitude: UInt64, start: Int) throws(CELCompileError) -> CELToken {
        if peek() == "u" || peek() == "U" {
            offset += 1
            return .uint(magnitude)
        }
        if magnitude <= UInt64(Int64.max) { return .int(Int64(magnitude)) }
        if magnitude == UInt64(Int64.max) + 1 { return .intMagnitude(magnitude) }
        throw error("integer literal out of range", at: start)
    }

    // MARK: Strings and bytes

    /// A string or bytes literal with its optional `r`/`b` prefixes; nil when the next token is none.
    private mutating func quotedLiteral() throws(CELCompileError) -> CELToken? {
        var look = 0
        var raw = false, bytes = false
        while look < 2, let prefix = peek(look) {
            if (prefix == "r" || prefix == "R") && !raw {
                raw = true
            } else if (prefix == "b" || prefix == "B") && !bytes {
                bytes = true
            } else {
                break
            }
            look += 1
        }
        guard let quote = peek(look), quote == "\"" || quote == "'" else { return nil }
        let start = offset
        offset += look
        let triple = peek(1) == quote && peek(2) == quote
        offset += triple ? 3 : 1
        var content: [UInt8] = []
        while true {
            guard let scalar = peek() else { throw error("unterminated string", at: start) }
            if scalar == quote && (!triple || (peek(1) == quote && peek(2) == quote)) {
                offset += triple ? 3 : 1
                break
            }
            if !triple && (scalar == "\n" || scalar == "\r") { throw error("newline in a string (use a triple-quoted one)") }
            offset += 1
            if scalar == "\\" && !raw {
                try escape(into: &content, bytes: bytes)
            } else {
                content.append(contentsOf: Array(String(scalar).utf8))
            }
        }
        if bytes { return .bytes(content) }
        guard let string = String(validating: content, as: UTF8.self) else { throw error("a string literal that is not UTF-8", at: start) }
        return .string(string)
    }

    /// One escape after its backslash: into UTF-8 for strings; `\x` and octal are raw bytes in bytes literals.
    private mutating func escape(into content: inout [UInt8], bytes: Bool) throws(CELCompileError) {
        guard let kind = peek() else { throw error("unterminated escape") }
        let at = offset - 1
        offset += 1
        let simple: [Unicode.Scalar: UInt8] = [
            "a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "\\": 92, "'": 39, "\"": 34, "`": 96, "?": 63,
        ]
        if let byte = simple[kind] {
            content.append(byte)
            return
        }
        let value: UInt32
        let isByte: Bool
        switch kind {
        case "x", "X":
            value = try hexDigits(2, at: at)
            isByte = true
        case "u":
            value = try hexDigits(4, at: at)
            isByte = false
        case "U":
            value = try hexDigits(8, at: at)
            isByte = false
        case "0"..."3":
            guard let second = peek(), let third = peek(1), ("0"..."7").contains(second), ("0"..."7").contains(third) else {
                throw error("an octal escape needs three digits", at: at)
            }
            offset += 2
            value = (kind.value - 48) * 64 + (second.value - 48) * 8 + (third.value - 48)
            isByte = true
        default:
            throw error("invalid escape \\\(kind)", at: at)
        }
        if bytes && isByte {
            content.append(UInt8(value))
            return
        }
        if bytes && !isByte { throw error("\\u and \\U are not allowed in bytes literals", at: at) }
        guard let scalar = Unicode.Scalar(value) else { throw error("escape is not a Unicode scalar value", at: at) }
        content.append(contentsOf: Array(String(scalar).utf8))
    }

    private mutating func hexDigits(_ count: Int, at: Int) throws(CELCompileError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<count {
            guard let digit = peek(), digit.properties.isASCIIHexDigit, let number = UInt32(String(digit), radix: 16) else {
                throw error("escape needs \(count) hexadecimal digits", at: at)
            }
            value = value * 16 + number
            offset += 1
        }
        return value
    }

    private static func isDigit(_ scalar: Unicode.Scalar) -> Bool { ("0"..."9").contains(scalar) }

    private static func isIdentifierStart(_ scalar: Unicode.Scalar) -> Bool {
        scalar == "_" || ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar)
    }
}
