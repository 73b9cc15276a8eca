import Foundation
import Testing
import GatehouseProxy

/// Every fuzz target's seeds, and every saved regression (an input that once crashed a target, kept in
/// Fuzz/<target>/regressions/ after its fix), run through the target as ordinary tests: the targets
/// compile on every CI, and their invariants (docs/security.md P51) are checked on each input.
/// A broken invariant stops the test process (`fatalError`), as it stops libFuzzer.
struct FuzzReplayTests {
    typealias Target = @Sendable (UnsafePointer<UInt8>, Int) -> CInt

    static let targets: [(String, Target)] = [
        ("FuzzHTTP1RequestParser", fuzzHTTP1RequestParser),
        ("FuzzUpstreamResponseParser", fuzzUpstreamResponseParser),
        ("FuzzCompactJWS", fuzzCompactJWS),
        ("FuzzStrictJSON", fuzzStrictJSON),
        ("FuzzCELExpression", fuzzCELExpression),
        ("FuzzCheckRequest", fuzzCheckRequest),
        ("FuzzHTTP2Codec", fuzzHTTP2Codec),
        ("FuzzClaimsReader", fuzzClaimsReader),
    ]

    /// This repository's Fuzz/ folder.
    static let fuzzDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()

    static func inputs(of target: String) throws -> [URL] {
        var found: [URL] = []
        for folder in ["seeds", "regressions"] {
            let directory = fuzzDirectory.appendingPathComponent(target).appendingPathComponent(folder)
            guard FileManager.default.fileExists(atPath: directory.path) else { continue }
            found += try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
        }
        return found.sorted { $0.path < $1.path }
    }

    @Test(arguments: targets.map(\.0))
    func everySeedAndRegressionPassesTheTargetsChecks(target: String) throws {
        let run = try #require(Self.targets.first { $0.0 == target }?.1)
        let inputs = try Self.inputs(of: target)
        #expect(inputs.count >= 4, "\(target) has only \(inputs.count) seeds")
        for input in inputs {
            var bytes = Array(try Data(contentsOf: input))
            // Every way the target can cut the bytes into reads: the selector byte's low nibble (Fuzz/FuzzSupport).
            let original = bytes.first ?? 0
            for selector in [original] + (0..<16).map(UInt8.init) {
                if !bytes.isEmpty { bytes[0] = selector }
                let result = bytes.withUnsafeBufferPointer { buffer in
                    buffer.baseAddress.map { run($0, buffer.count) } ?? 0
                }
                #expect(result == 0, "\(input.lastPathComponent) with selector \(selector)")
            }
        }
    }
}
