extension LinearRegex.Parser {
    // An extension of a nested type does not see its parent's members unqualified.
    typealias SyntaxError = LinearRegex.SyntaxError
    typealias ScalarSet = LinearRegex.ScalarSet

    private static let backtracking = "needs backtracking, which RE2 syntax does not have"

    /// At `\` outside a class: an assertion (`\A \z \b \B`), a Perl class (`\d \s \w` and negations), a Unicode
    /// general category (`\pL`), quoted text
    /// (`\Q…\E`, each scalar a literal, so a following `*` repeats only the last) or an escaped scalar.
    mutating func parseEscape(into items: inout [LinearRegex.Node]) throws(SyntaxError) {
        let start = position
        guard let letter = peek(1) else { throw error("trailing \\: nothing to escape", at: start) }
        switch letter {
        case "A": items.append(.assertion(.beginText))
        case "z": items.append(.assertion(.endText))
        case "b": items.append(.assertion(.wordBoundary))
        case "B": items.append(.assertion(.notWordBoundary))
        case "d", "D", "s", "S", "w", "W":
            if let set = ScalarSet.perlClass(letter, caseInsensitive: flags.caseInsensitive) {
                items.append(.scalars(set))
            }
        case "p", "P":
            items.append(.scalars(try parseUnicodeClass()))
            return
        case "Q":
            position += 2
            while let scalar = peek() {
                if scalar == "\\", peek(1) == "E" {
                    position += 2
                    return
                }
                items.append(literal(scalar.value))
                position += 1
            }
            return
        default:
            items.append(literal(try parseEscapedScalar()))
            return
        }
        position += 2
    }

    /// At `\`: the scalar an escape stands for, inside or outside a class. The forms are RE2's: `\a \f \n \r \t
    /// \v`, octal `\0`, `\012`, `\123` (a non-zero digit starts an octal escape only when another octal digit
    /// follows; alone it would be a backreference), hex `\x41` (exactly two digits) and `\x{10FFFF}`, and any
    /// escaped ASCII punctuation or symbol standing for itself. Escaped letters and digits with no meaning are
    /// errors, as in RE2 (`\i` is not `i`).
    mutating func parseEscapedScalar() throws(SyntaxError) -> UInt32 {
        let start = position
        guard let letter = peek(1) else { throw error("trailing \\: nothing to escape", at: start) }
        position += 2
        switch letter {
        case "1"..."7" where peek().map { ("0"..."7").contains($0) } ?? false, "0":
            var value = letter.value - 0x30
            for _ in 0..<2 {
                guard let next = peek(), ("0"..."7").contains(next) else { break }
                value = value * 8 + (next.value - 0x30)
                position += 1
            }
            return value
        case "1"..."9":
            throw error("backreference \\\(letter) is not supported: it \(Self.backtracking)", at: start)
        case "k", "g":
            throw error("backreference \\\(letter) is not supported: it \(Self.backtracking)", at: start)
        case "x":
            return try parseHexEscape(start: start)
        case "a": return 0x07
        case "f": return 0x0C
        case "n": return 0x0A
        case "r": return 0x0D
        case "t": return 0x09
        case "v": return 0x0B
        case "p", "P":
            throw error("Unicode character class \\\(letter) is not supported by this matcher", at: start)
        case "C":
            throw error("\\C (any byte) is not supported: text is matched by Unicode scalar", at: start)
        case "Z":
            throw error("invalid escape sequence \\Z: RE2 syntax has no \\Z (use \\z, or $)", at: start)
        default:
            if letter.isASCII, !letter.properties.isAlphabetic, !("0"..."9").contains(letter) {
                return letter.value  // escaped punctuation, symbols and spaces stand for themselves
            }
            throw error("invalid escape sequence \\\(letter)", at: start)
        }
    }

    /// After `\x`: two hex digits, or any number of them (at least one) in braces up to 0x10FFFF.
    private mutating func parseHexEscape(start: Int) throws(SyntaxError) -> UInt32 {
        func hex(_ scalar: Unicode.Scalar?) -> UInt32? {
            guard let scalar, scalar.isASCII, let value = UInt32(String(scalar), radix: 16) else { return nil }
            return value
        }
        if peek() == "{" {
            position += 1
            var value: UInt32 = 0
            var digits = 0
            while let digit = hex(peek()) {
                value = value * 16 + digit
                digits += 1
                position += 1
                guard value <= ScalarSet.maxValue else {
                    throw error("invalid escape sequence \(text(from: start)): beyond U+10FFFF", at: start)
                }
            }
            guard digits > 0, peek() == "}" else {
                throw error("invalid escape sequence \(text(from: start)): expected hex digits and }", at: start)
            }
            position += 1
            return value
        }
        guard let high = hex(peek()), let low = hex(peek(1)) else {
            throw error("invalid escape sequence \(text(from: start, to: position + 2)): expected two hex digits",
                        at: start)
        }
        position += 2
        return high * 16 + low
    }

    // MARK: Bracket classes

    /// At `[`: a class. `^` first negates it; `]` first (after any `^`) is a literal; `-` is a range between two
    /// scalars and a literal where it cannot be one (first, last, after a range). Inside: escaped scalars, Perl
    /// classes, and POSIX classes `[:alpha:]` / `[:^alpha:]`. Like RE2, `[^…]` does match `\n`.
    /// Under `(?i)` each item is folded before the whole is negated.
    mutating func parseClass() throws(SyntaxError) -> ScalarSet {
        let open = position
        position += 1
        var negated = false
        if peek() == "^" {
            negated = true
            position += 1
        }
        var pieces: [ClosedRange<UInt32>] = []
        var first = true
        while true {
            guard let scalar = peek() else { throw error("missing ] to close the [ opened", at: open) }
            if scalar == "]", !first {
                position += 1
                break
            }
            first = false
            if scalar == "[", peek(1) == ":", let named = try parsePOSIXClass() {
                pieces.append(contentsOf: named.ranges)
                continue
            }
            if scalar == "\\", peek(1) == "p" || peek(1) == "P" {
                pieces.append(contentsOf: try parseUnicodeClass().ranges)
                continue
            }
            if scalar == "\\", let letter = peek(1),
               let perl = ScalarSet.perlClass(letter, caseInsensitive: flags.caseInsensitive) {
                position += 2
                pieces.append(contentsOf: perl.ranges)
                continue
            }
            let itemStart = position
            let low = try parseClassScalar()
            var high = low
            if peek() == "-", let after = peek(1), after != "]" {
                position += 1
                high = try parseClassScalar()
                guard low <= high else {
                    throw error("invalid character class range \(text(from: itemStart))", at: itemStart)
                }
            }
            let item = ScalarSet(normalizing: [low...high])
            pieces.append(contentsOf: flags.caseInsensitive ? item.caseFolded().ranges : item.ranges)
        }
        let set = ScalarSet(normalizing: pieces)
        return negated ? set.inverted() : set
    }

    /// One scalar inside a class: an escape or the scalar itself.
    private mutating func parseClassScalar() throws(SyntaxError) -> UInt32 {
        guard let scalar = peek() else { throw error("missing ] at the end of the pattern", at: position) }
        if scalar == "\\" { return try parseEscapedScalar() }
        position += 1
        return scalar.value
    }

    /// At `[:` inside a class: the POSIX class, or nil (position unchanged) if no `:]` follows, in which case the
    /// `[` is a literal. As in RE2, the first `:]` anywhere after ends the name, and an unknown name is an error.
    private mutating func parsePOSIXClass() throws(SyntaxError) -> ScalarSet? {
        let start = position
        var end = start + 2
        while end + 1 < pattern.count, !(pattern[end] == ":" && pattern[end + 1] == "]") { end += 1 }
        guard end + 1 < pattern.count else { return nil }
        var name = text(from: start + 2, to: end)
        let negated = name.hasPrefix("^")
        if negated { name.removeFirst() }
        guard let set = ScalarSet.posixClass(named: name, negated: negated, caseInsensitive: flags.caseInsensitive)
        else {
            throw error("invalid character class range \(text(from: start, to: end + 2)): unknown POSIX class",
                        at: start)
        }
        position = end + 2
        return set
    }
}
