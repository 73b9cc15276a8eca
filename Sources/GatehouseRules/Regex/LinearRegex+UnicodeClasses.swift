extension LinearRegex.Parser {
    /// At `\p` or `\P`: a Unicode general category, RE2's forms `\pL`, `\p{Lu}`, `\PL`, `\p{^Lu}` and `\p{Any}`.
    /// Scripts (`\p{Greek}`) are refused: Swift exposes no script property to build them from.
    mutating func parseUnicodeClass() throws(LinearRegex.SyntaxError) -> LinearRegex.ScalarSet {
        let start = position
        var negated = peek(1) == "P"
        position += 2
        var name = ""
        if peek() == "{" {
            position += 1
            if peek() == "^" {
                negated.toggle()
                position += 1
            }
            while let scalar = peek(), scalar != "}" {
                name.unicodeScalars.append(scalar)
                position += 1
            }
            guard peek() == "}" else { throw error("missing } after \\p{", at: start) }
            position += 1
        } else if let scalar = peek() {
            name = String(scalar)
            position += 1
        }
        guard let categories = Self.categories(named: name) else {
            throw error("Unicode class \\p{\(name)} is not supported (general categories such as L, Lu, N, Nd are; scripts are not)", at: start)
        }
        var set = name == "Any" ? LinearRegex.ScalarSet.all : Self.scalars(in: categories)
        if flags.caseInsensitive { set = set.caseFolded() }
        return negated ? set.inverted() : set
    }

    private static func categories(named name: String) -> Set<Unicode.GeneralCategory>? {
        let all: [(String, Unicode.GeneralCategory)] = [
            ("Lu", .uppercaseLetter), ("Ll", .lowercaseLetter), ("Lt", .titlecaseLetter), ("Lm", .modifierLetter), ("Lo", .otherLetter),
            ("Mn", .nonspacingMark), ("Mc", .spacingMark), ("Me", .enclosingMark), ("Nd", .decimalNumber), ("Nl", .letterNumber),
            ("No", .otherNumber), ("Pc", .connectorPunctuation), ("Pd", .dashPunctuation), ("Ps", .openPunctuation),
            ("Pe", .closePunctuation), ("Pi", .initialPunctuation), ("Pf", .finalPunctuation), ("Po", .otherPunctuation),
            ("Sm", .mathSymbol), ("Sc", .currencySymbol), ("Sk", .modifierSymbol), ("So", .otherSymbol), ("Zs", .spaceSeparator),
            ("Zl", .lineSeparator), ("Zp", .paragraphSeparator), ("Cc", .control), ("Cf", .format), ("Co", .privateUse),
        ]
        if name == "Any" { return [] }
        let matching = all.filter { $0.0 == name || (name.count == 1 && $0.0.hasPrefix(name)) }
        return matching.isEmpty ? nil : Set(matching.map(\.1))
    }

    /// Every scalar of the categories, as ranges.
    private static func scalars(in categories: Set<Unicode.GeneralCategory>) -> LinearRegex.ScalarSet {
        LinearRegex.ScalarSet(normalizing: categories.flatMap { rangesByCategory[$0] ?? [] })
    }

    /// Each general category's scalars as ranges: one pass over the code space, made the first time a pattern
    /// names a category (a process's patterns then share it).
    private static let rangesByCategory: [Unicode.GeneralCategory: [ClosedRange<UInt32>]] = {
        var table: [Unicode.GeneralCategory: [ClosedRange<UInt32>]] = [:]
        var current: (category: Unicode.GeneralCategory, start: UInt32)?
        for value in UInt32(0)...LinearRegex.ScalarSet.maxValue + 1 {
            let category = Unicode.Scalar(value)?.properties.generalCategory
            if let open = current, open.category != category {
                table[open.category, default: []].append(open.start...(value - 1))
                current = nil
            }
            if current == nil, let category { current = (category, value) }
        }
        return table
    }()
}
