@testable import GatehouseRules
import Foundation
import Testing

/// `LinearRegex` against Python's `re` on random patterns and texts.
///
/// Python backtracks where `LinearRegex` does not, but for a yes/no search the two must agree wherever their
/// syntaxes mean the same thing. The generator (Python, fixed seed, so every run checks the same cases) keeps to
/// that common ground: literals (ASCII and é 日), classes, `.`, Perl classes (with `re.ASCII`, their RE2 meanings),
/// groups, alternation, `* + ? {n} {n,} {n,m}` and lazy forms, `^ $ \b \B`, and the flags `i s m`. Where the
/// syntaxes differ it translates: RE2's `$` outside multi-line mode is Python's `\Z` (Python's `$` also matches
/// before a final newline). Python's `\B` never matches an empty text (before 3.14), so `\B` patterns skip it.
/// Texts have no `\v`, which Python's ASCII `\s` includes and RE2's does not.
///
/// python3 must be on PATH (CI installs it); without it the test fails rather than skips.
struct LinearRegexDifferentialTests {
    private struct Case: Decodable {
        let pattern: String
        let texts: [String]
        let expected: [Bool]
    }

    private struct Cases: Decodable {
        let cases: [Case]
        let skipped: Int
    }

    private static let generator = #"""
import json, random, re, sys

rng = random.Random(20240611)

def literal():
    return rng.choice("aaabbbccx0-_ ") if rng.random() < 0.85 else rng.choice(["é", "日", r"\.", r"\-", r"\*"])

def char_class():
    items = [rng.choice(["a", "b", "c", "x", "0", "_", " ", "é", "日", "a-c", "0-5", "b-y", r"\d", r"\w", r"\s",
                         r"\D", r"\W", r"\S", ".", r"\]", r"\\", "A-C"]) for _ in range(rng.randint(1, 3))]
    return "[" + ("^" if rng.random() < 0.3 else "") + "".join(items) + "]"

def quantifier():
    r = rng.random()
    if r < 0.25: q = "*"
    elif r < 0.45: q = "+"
    elif r < 0.65: q = "?"
    else:
        n = rng.randint(0, 3)
        form = rng.randint(0, 2)
        q = "{%d}" % n if form == 0 else "{%d,}" % n if form == 1 else "{%d,%d}" % (n, n + rng.randint(0, 2))
    return q + ("?" if rng.random() < 0.3 else "")

def atom(depth, multiline):
    """One atom as (RE2 text, Python text, quantifiable)."""
    r = rng.random()
    if depth > 0 and r < 0.18:
        inner_re2, inner_py = alternation(depth - 1, multiline)
        opener = rng.choice(["(", "(?:"])
        return opener + inner_re2 + ")", opener + inner_py + ")", True
    if r < 0.55:
        text = literal()
        return text, text, True
    if r < 0.65:
        return ".", ".", True
    if r < 0.78:
        text = char_class()
        return text, text, True
    if r < 0.88:
        text = rng.choice([r"\d", r"\w", r"\s", r"\D", r"\W", r"\S"])
        return text, text, True
    text = rng.choice(["^", "$", r"\b", r"\B"])
    if text == "$" and not multiline:
        return "$", r"\Z", False
    return text, text, False

def concatenation(depth, multiline):
    re2, py = "", ""
    for _ in range(rng.randint(0, 4)):
        a, b, quantifiable = atom(depth, multiline)
        if quantifiable and rng.random() < 0.35:
            q = quantifier()
            a, b = a + q, b + q
        re2, py = re2 + a, py + b
    return re2, py

def alternation(depth, multiline):
    branches = [concatenation(depth, multiline) for _ in range(rng.choices([1, 2, 3], [6, 3, 1])[0])]
    return "|".join(b[0] for b in branches), "|".join(b[1] for b in branches)

ALPHABET = list("aaaaabbbbcccABCx0_ -.\n\t") + ["é", "日", "😀"]

cases, skipped = [], 0
while len(cases) < 600:
    flags = "".join(f for f in "ism" if rng.random() < 0.12)
    re2, py = alternation(2, "m" in flags)
    if flags:
        re2, py = "(?%s)" % flags + re2, "(?%s)" % flags + py
    try:
        compiled = re.compile(py, re.ASCII)
    except re.error:
        skipped += 1
        continue
    texts = ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 10))) for _ in range(12)]
    if r"\B" in re2:
        texts = [t for t in texts if t]
    cases.append({"pattern": re2, "texts": texts,
                  "expected": [compiled.search(t) is not None for t in texts]})
json.dump({"cases": cases, "skipped": skipped}, sys.stdout)
"""#

    @Test func agreesWithPythonRe() throws {
        let cases = try Self.generateCases()
        #expect(cases.count == 600)
        var compared = 0
        var disagreements: [String] = []
        for testCase in cases {
            let regex: LinearRegex
            do {
                regex = try LinearRegex(testCase.pattern)
            } catch {
                disagreements.append("\(testCase.pattern.debugDescription) refused: \(error)")
                continue
            }
            for (text, expected) in zip(testCase.texts, testCase.expected) {
                compared += 1
                if regex.matches(text) != expected {
                    disagreements.append("\(testCase.pattern.debugDescription) on \(text.debugDescription): Python says \(expected)")
                }
            }
        }
        #expect(compared > 6000)
        #expect(disagreements.isEmpty, "\(disagreements.count) of \(compared) disagree:\n\(disagreements.prefix(25).joined(separator: "\n"))")
    }

    /// Runs the generator with `python3` from PATH.
    private static func generateCases() throws -> [Case] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", generator]
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let errorText = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            Issue.record("""
                the differential test needs python3 on PATH (CI installs it): `/usr/bin/env python3` exited with \
                \(process.terminationStatus): \(errorText)
                """)
            return []
        }
        return try JSONDecoder().decode(Cases.self, from: data).cases
    }
}
