import Foundation
import Testing

/// The module graph the README draws is the one `Package.swift` declares: the compiler enforces the manifest's
/// directions, and this keeps the picture a newcomer reads from drifting away from them.
struct ModuleGraphTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Each library or executable target named `Gatehouse…` and the `Gatehouse…` targets it depends on.
    static func manifestGraph() throws -> [String: Set<String>] {
        let manifest = try String(contentsOf: repository.appendingPathComponent("Package.swift"), encoding: .utf8)
        let target = /\.(?:target|executableTarget)\(\s*name: "(Gatehouse\w*)",\s*dependencies: \[([^\]]*)\]/
        var graph: [String: Set<String>] = [:]
        for match in manifest.matches(of: target) {
            graph[String(match.1)] = Set(match.2.matches(of: /"(Gatehouse\w*)"/).map { String($0.1) })
        }
        return graph
    }

    /// The README's `Module → modules it imports` lines.
    static func readmeGraph() throws -> [String: Set<String>] {
        let readme = try String(contentsOf: repository.appendingPathComponent("README.md"), encoding: .utf8)
        var graph: [String: Set<String>] = [:]
        for line in readme.split(separator: "\n") {
            guard let match = line.wholeMatch(of: /(Gatehouse\w*)\s+→\s+(.*)/) else { continue }
            graph[String(match.1)] = Set(match.2.matches(of: /\bGatehouse\w*/).map { String($0.0) })
        }
        return graph
    }

    @Test func theReadmesModuleGraphIsTheManifests() throws {
        let manifest = try Self.manifestGraph()
        #expect(manifest.count >= 4, "the manifest's targets were not found: \(manifest)")
        #expect(try Self.readmeGraph() == manifest)
    }

    /// The request core takes time, settings and verdicts in as values (issue 45): whatever the manifest lets it see,
    /// its sources import no I/O module and name no event loop, future or clock.
    @Test func theRequestCoreImportsNoIOAndReadsNoClock() throws {
        let allowed: Set<String> = [
            "Foundation", "NIOCore", "NIOHTTP1", "NIOHPACK", "Atomics", "Crypto", "GatehouseSyntax", "GatehouseRules",
            "GatehouseHTTP", "GatehouseConfig", "GatehouseTokens", "GatehouseTelemetry", "GatehouseAuth",
        ]
        let forbidden = /\b(?:EventLoop\w*|NIODeadline\.now\b|Date\(\)|DispatchTime\b|DispatchQueue\b|ContinuousClock\b|Task\b)/
        let root = Self.repository.appendingPathComponent("Sources/GatehouseExchange")
        let files = try #require(FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil))
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }
        #expect(files.count >= 10, "the core's sources were not found under \(root.path)")
        for file in files {
            let code = try String(contentsOf: file, encoding: .utf8).split(separator: "\n")
                .filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("//") }
            for line in code {
                if let imported = line.wholeMatch(of: /(?:@\w+ )*(?:public |package )?import (\w+)/) {
                    #expect(allowed.contains(String(imported.1)), "\(file.lastPathComponent) imports \(imported.1)")
                }
                #expect(!line.contains(forbidden), "\(file.lastPathComponent): \(line)")
            }
        }
    }
}
