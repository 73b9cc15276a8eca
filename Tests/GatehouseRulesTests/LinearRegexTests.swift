import Testing
@testable import GatehouseRules

/// The RE2 syntax `LinearRegex` accepts, what it matches (CEL `matches`: an unanchored search), and what it refuses.
struct LinearRegexTests {
    /// `pattern` searched in `text` must give `expected`.
    private func check(_ pattern: String, _ text: String, _ expected: Bool, sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            let regex = try LinearRegex(pattern)
            #expect(regex.matches(text) == expected, "\(pattern) against \(text.debugDescription)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("\(pattern) did not compile: \(error)", sourceLocation: sourceLocation)
        }
    }

    /// `pattern` must be refused with a message containing `fragment`.
    private func refuse(_ pattern: String, _ fragment: String, sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            let regex = try LinearRegex(pattern)
            Issue.record("\(pattern) compiled (\(regex.programSize) instructions), expected an error", sourceLocation: sourceLocation)
        } catch {
            #expect(error.message.contains(fragment), "\(pattern): \(error.message)", sourceLocation: sourceLocation)
        }
    }

    @Test func literalsSearchAnywhereInTheText() {
        check("b", "abc", true)
        check("abc", "xxabcxx", true)
        check("abd", "abc", false)
        check("", "", true)
        check("", "anything", true)
        check("é日😀", "xé日😀y", true)
        check("日", "日本", true)
        check("a", "", false)
    }

    @Test func dotMatchesAnyScalarButNewlineUnlessFlagS() {
        check("a.c", "abc", true)
        check("a.c", "a😀c", true)
        check("a.c", "a\nc", false)
        check("(?s)a.c", "a\nc", true)
        check("a.c", "ac", false)
        check("^.$", "é", true)
        check("^.$", "e\u{301}", false)  // two scalars, one Character: matched by scalar, like RE2
    }

    @Test func escapes() {
        check(#"a\.c"#, "a.c", true)
        check(#"a\.c"#, "abc", false)
        check(#"\\"#, #"a\b"#, true)
        check(#"\*\+\?\(\)\[\]\{\}\|\^\$"#, "*+?()[]{}|^$", true)
        check(#"\n\t\r\f\v\a"#, "\n\t\r\u{0C}\u{0B}\u{07}", true)
        check(#"\x41\x{1F600}\x{65}"#, "A😀e", true)
        check(#"\x{10FFFF}"#, "\u{10FFFF}", true)
        check(#"\0"#, "\u{0}", true)
        check(#"\101\12"#, "A\n", true)
        check(##"\_\-\ \#\&\~"##, "_- #&~", true)
        check(#"\Qa.b*\E+"#, "a.b**", true)  // the + repeats only the quoted *
        check(#"\Qa.b*\E+"#, "a.bbb", false)
        check(#"\Qa.b*\E"#, "axb", false)
        check(#"\Q(unterminated"#, "(unterminated", true)
    }

    @Test func classes() {
        check("[abc]", "xbx", true)
        check("[abc]", "xyz", false)
        check("^[a-z]+$", "hello", true)
        check("^[a-z]+$", "Hello", false)
        check("[^a-z]", "abc", false)
        check("[^a-z]", "abc1", true)
        check("[^a]", "\n", true)  // RE2: a negated class matches newline
        check("[]a]", "]", true)
        check("[^]a]", "]", false)
        check("[^]a]", "b", true)
        check("[a-]", "-", true)
        check("[-a]", "-", true)
        check("[a-c-e]", "-", true)
        check("[a-c-e]", "d", false)
        check(#"[\d]"#, "7", true)
        check(#"[\D]"#, "7", false)
        check(#"[\w.]"#, ".", true)
        check(#"[\s]"#, "\t", true)
        check(#"[\]\\]"#, "\\", true)
        check(#"[\x{1F600}-\x{1F64F}]"#, "😀", true)
        check("[é日]", "日", true)
        check("[[:alpha:]]", "q", true)
        check("[[:alpha:]]", "5", false)
        check("[[:^alpha:]]", "5", true)
        check("[[:digit:][:upper:]]+$", "A1", true)
        check("[[:punct:]]", "!", true)
        check("[[:xdigit:]]{4}", "beef", true)
        check("[[:space:]]", "\u{0B}", true)
        check("[a[]", "[", true)  // `[` not starting [:name:] is a literal
    }

    @Test func perlClassesAreASCII() {
        check(#"\d"#, "٣", false)  // Arabic-Indic digit: not \d in RE2
        check(#"\d+"#, "x42", true)
        check(#"\w"#, "é", false)
        check(#"\w"#, "_", true)
        check(#"\W"#, "é", true)
        check(#"\s"#, " ", true)
        check(#"\s"#, "\u{0B}", false)  // RE2's \s has no \v
        check(#"\S"#, " ", false)
        check(#"^\D\W\S$"#, "a b", true)
        check(#"^\D\W\S$"#, "1!b", false)
    }

    @Test func anchors() {
        check("^abc", "abcd", true)
        check("^abc", "xabc", false)
        check("abc$", "xabc", true)
        check("abc$", "abc\n", false)  // RE2's $ is the very end, not before a final newline
        check("(?m)abc$", "abc\nx", true)
        check("(?m)^x", "abc\nx", true)
        check("^x", "abc\nx", false)
        check("(?m)^$", "a\n\nb", true)
        check(#"\Aabc\z"#, "abc", true)
        check(#"\Aabc\z"#, "abc\n", false)
        check(#"(?m)\Ab"#, "a\nb", false)
        check("^", "", true)
        check("$", "", true)
        check("^$", "", true)
        check("^$", "x", false)
        check("a^b", "ab", false)
        check("a|^b", "cb", false)
        check("x*^a", "a", true)
    }

    @Test func wordBoundaries() {
        check(#"\bfoo\b"#, "a foo b", true)
        check(#"\bfoo\b"#, "afoo", false)
        check(#"\Bfoo"#, "afoo", true)
        check(#"\Bfoo"#, "foo", false)
        check(#"\b"#, "", false)
        check(#"\B"#, "", true)
        check(#"\bé"#, "é", false)  // é is not an ASCII word scalar: no boundary before it at the start
    }

    @Test func groupsAndAlternation() {
        check("(ab)+c", "ababc", true)
        check("(?:ab)+c", "abac", false)
        check("(?P<year>[0-9]{4})-(?<month>[0-9]{2})", "on 2024-06", true)
        check("cat|dog", "hotdog", true)
        check("cat|dog", "bird", false)
        check("a(|b)c", "ac", true)
        check("a(|b)c", "abc", true)
        check("()", "x", true)
        check("(a|b|)+$", "", true)
        check("x(a|bc|def)y", "xdefy", true)
        check("x(a|bc|def)y", "xdey", false)
    }

    @Test func quantifiers() {
        check("ab*c", "ac", true)
        check("ab+c", "ac", false)
        check("ab?c", "abbc", false)
        check("^a{3}$", "aaa", true)
        check("^a{3}$", "aa", false)
        check("^a{2,}$", "aaaaa", true)
        check("^a{2,}$", "a", false)
        check("^a{2,3}$", "aaaa", false)
        check("^a{0}$", "", true)
        check("^a{0,0}b", "b", true)
        check("^(ab){1,2}$", "abab", true)
        check("^a*?b+?c??d{1,2}?$", "aabbd", true)
        check("^(a*)*$", "aaa", true)
        check("^(a*)+b", "b", true)
        check("^(a?)*$", "", true)
        check("^(?:a|b)*?c", "ababc", true)
        check("a{,2}", "a{,2}", true)  // not a count: literal, as in RE2
        check("a{,2}", "aa", false)
        check("a{x}", "a{x}", true)
        check("a{01}", "a{01}", true)
        check("{", "{", true)
        check("x{2", "x{2", true)
        check("^a{1000}$", String(repeating: "a", count: 1000), true)
        check("^a{1000}$", String(repeating: "a", count: 999), false)
    }

    @Test func flags() {
        check("(?i)hello", "HeLLo", true)
        check("(?i:h)ello", "Hello", true)
        check("(?i:h)ello", "HELLO", false)
        check("a(?i)b", "aB", true)
        check("a(?i)b", "AB", false)
        check("(?i)a(?-i)b", "Ab", true)
        check("(?i)a(?-i)b", "AB", false)
        check("(x(?i)y)Y", "xYY", true)
        check("(x(?i)y)Y", "xYy", false)  // the flag ends with its group
        check("a(?i)b|c", "C", true)  // and holds across | to the end of the group
        check("(?i)[a-c]+$", "ABC", true)
        check("(?i)[^a]", "A", false)
        check("(?i)é", "É", true)
        check("(?i)σ", "Σ", true)
        check("(?i)σ", "ς", true)
        check("(?i)k", "\u{212A}", true)  // Kelvin sign folds with k, as in RE2
        check("(?i)s", "ſ", true)
        check("(?i)i", "ı", false)  // Turkish dotless i does not fold with i in RE2
        check(#"(?i)\W"#, "\u{212A}", false)
        check("(?s:.)", "\n", true)
        check("(?m:^)b", "a\nb", true)
        check("(?U)a+", "a", true)
        check("(?im-s:a.)", "A\n", false)
    }

    @Test func programSizeIsReported() throws {
        #expect(try LinearRegex("").programSize == 1)
        #expect(try LinearRegex("a").programSize == 2)
        #expect(try LinearRegex("a{1000}").programSize == 1001)
        #expect(try LinearRegex("[a-z]{1000}").programSize == 1001)
    }

    @Test func backtrackingFeaturesAreRefused() {
        refuse(#"(a)\1"#, "backreference")
        refuse(#"(a)\9"#, "needs backtracking")
        refuse(#"(?P<x>a)\k<x>"#, "backreference")
        refuse("(?P<x>a)(?P=x)", "backreference")
        refuse("a(?=b)", "lookahead")
        refuse("a(?!b)", "lookahead")
        refuse("(?<=a)b", "lookbehind")
        refuse("(?<!a)b", "lookbehind")
        refuse("(?>a)", "atomic")
    }

    @Test func malformedPatternsAreRefused() {
        refuse("(a", "missing )")
        refuse("a)", "unexpected )")
        refuse("(?:a", "missing )")
        refuse("[a", "missing ]")
        refuse("[]", "missing ]")
        refuse("[^]", "missing ]")
        refuse("[z-a]", "invalid character class range")
        refuse("[[:foo:]]", "unknown POSIX class")
        refuse("*a", "missing argument")
        refuse("a|*", "missing argument")
        refuse("(*)", "missing argument")
        refuse("(?i)*", "missing argument")
        refuse("{2}", "missing argument")
        refuse("a**", "bad repetition operator")
        refuse("a+*", "bad repetition operator")
        refuse("a*??", "bad repetition operator")
        refuse("a{2}{3}", "bad repetition operator")
        refuse("a{2}*", "bad repetition operator")
        refuse("a{1001}", "invalid repetition size")
        refuse("a{2,1001}", "invalid repetition size")
        refuse("a{3,2}", "invalid repetition size")
        refuse("a{99999999999}", "invalid repetition size")
        refuse("(a{2}){600}", "invalid repetition size")  // nested counts multiply past 1000, as RE2 refuses
        refuse(#"\i"#, "invalid escape sequence \\i")
        refuse(#"\8"#, "backreference")
        refuse(#"\Z"#, "invalid escape")
        refuse(#"\é"#, "invalid escape")
        refuse(#"\x4"#, "two hex digits")
        refuse(#"\x{}"#, "hex digits")
        refuse(#"\x{110000}"#, "beyond U+10FFFF")
        refuse(#"\x{41"#, "hex digits")
        refuse("a\\", "trailing \\")
        refuse(#"[\i]"#, "invalid escape")
        refuse(#"[a-\d]"#, "invalid escape")
        refuse(#"\p{Greek}"#, "not supported")
        refuse(#"[\p{Latin}]"#, "not supported")
        refuse(#"\p{Lu"#, "missing }")
        refuse(#"\C"#, "not supported")
        refuse("(?)", "invalid or unsupported group syntax")
        refuse("(?-)", "invalid or unsupported group syntax")
        refuse("(?i-)", "invalid or unsupported group syntax")
        refuse("(?x)", "invalid or unsupported group syntax")
        refuse("(?#comment)", "not supported")
        refuse("(?P<>a)", "invalid named capture group")
        refuse("(?P<a-b>a)", "invalid named capture group")
        refuse("(?P<n>a)(?P<n>b)", "duplicate capture group name")
        refuse("(?P<n", "missing >")
        refuse("(?i", "missing )")
    }

    @Test func errorsNameTheOffset() {
        #expect(throws: LinearRegex.SyntaxError(message: "missing ) to close the ( opened at offset 2")) {
            try LinearRegex("ab(cd")
        }
        #expect(throws: LinearRegex.SyntaxError(message: "invalid escape sequence \\i at offset 1")) {
            try LinearRegex(#"a\i"#)
        }
    }

    @Test func oversizedProgramsAreRefusedNotBuilt() {
        refuse("(a{1000}){1000}", "invalid repetition size")
        refuse("((a{100}){10}){10}", "invalid repetition size")
        refuse("(?:[a-z]{1000}){11}", "invalid repetition size")
        refuse("(?:abcdefghijk){1000}", "pattern too large")
        refuse(String(repeating: "(?:a{1000})", count: 11), "pattern too large")
        refuse(String(repeating: "a", count: 20_000), "pattern too large")
    }

    @Test func nestingIsBounded() {
        let deepest = String(repeating: "(", count: 50) + "a" + String(repeating: ")", count: 50)
        check(deepest, "a", true)
        let deeper = String(repeating: "(", count: 51) + "a" + String(repeating: ")", count: 51)
        refuse(deeper, "nests too deeply")
        refuse(String(repeating: "(", count: 100_000), "nests too deeply")
        refuse(String(repeating: "[", count: 100_000), "missing ]")
    }

    /// `\pL`, `\p{Lu}`, `\PL`, `\p{^N}` and inside brackets: Unicode general categories (issue 44's CEL `matches`).
    @Test func unicodeGeneralCategories() {
        check(#"^\pL+$"#, "Éloïse", true)
        check(#"^\pL+$"#, "a1", false)
        check(#"^\p{Lu}\p{Ll}+$"#, "Ñandú", true)
        check(#"^\p{Lu}"#, "ñ", false)
        check(#"^\PL$"#, "7", true)
        check(#"^\p{^N}$"#, "x", true)
        check(#"^[\p{Nd}_]+$"#, "٣_4", true)
        check(#"(?i)^\p{Lu}$"#, "a", true)
        check(#"^\p{Any}$"#, "😀", true)
    }
}
