import Foundation
import Testing
import GatehouseTokenFixtures

/// The module graph the README draws is the one `Package.swift` declares: the compiler enforces the manifest's
/// directions, and this keeps the picture a newcomer reads from drifting away from them.
struct ModuleGraphTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Each library or executable target named `Gatehouse…` (its sources under `Sources/`) and the `Gatehouse…`
    /// targets it depends on.
    static func manifestGraph() throws -> [String: Set<String>] {
        let manifest = try String(contentsOf: repository.appendingPathComponent("Package.swift"), encoding: .utf8)
        let target = /\.(?:target|executableTarget)\(\s*name: "(Gatehouse\w*)",\s*dependencies: \[([^\]]*)\]/
        var graph: [String: Set<String>] = [:]
        for match in manifest.matches(of: target) where sourceDirectory(of: String(match.1)).path.contains("/Sources/") {
            graph[String(match.1)] = Set(match.2.matches(of: /"(Gatehouse\w*)"/).map { String($0.1) })
        }
        return graph
    }

    /// Where a target's sources are: `Sources/<name>`, or `Tests/<name>` for a test target and the test support.
    static func sourceDirectory(of target: String) -> URL {
        let library = repository.appendingPathComponent("Sources/\(target)")
        return FileManager.default.fileExists(atPath: library.path) ? library : repository.appendingPathComponent("Tests/\(target)")
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

    /// Each `Gatehouse…` target's (test targets' too) direct dependencies as the modules they bring: other targets by name, products by
    /// the `static let name: Self = .product(name: "Module", …)` the manifest spells them with.
    static func declaredImports() throws -> [String: Set<String>] {
        let manifest = try String(contentsOf: repository.appendingPathComponent("Package.swift"), encoding: .utf8)
        var products: [String: String] = [:]
        for match in manifest.matches(of: /static let (\w+): Self = \.product\(name: "(\w+)"/) { products[String(match.1)] = String(match.2) }
        let target = /\.(?:target|executableTarget|testTarget)\(\s*name: "(Gatehouse\w*)",\s*dependencies: \[([^\]]*)\]/
        var declared: [String: Set<String>] = [:]
        for match in manifest.matches(of: target) {
            let named = match.2.matches(of: /"(\w+)"/).map { String($0.1) }
            let spelled = match.2.matches(of: /\.(\w+)\b/).compactMap { products[String($0.1)] }
            declared[String(match.1)] = Set(named + spelled)
        }
        return declared
    }

    /// SwiftPM's explicit import check refuses only a module outside a target's dependency closure; one inside it but
    /// not declared (reached through another dependency) compiles, and the manifest then no longer says what the code
    /// needs. Every `import` in a target's sources (a test target's too) names one of its own dependencies, or the
    /// platform.
    @Test func everyImportIsADeclaredDirectDependency() throws {
        let platform: Set<String> = ["Foundation", "FoundationEssentials", "Glibc", "Musl", "Darwin", "Dispatch", "Synchronization",
                                     "Testing", "XCTest"]
        let declared = try Self.declaredImports()
        #expect(declared.count >= 16, "the manifest's targets were not found: \(declared.keys.sorted())")
        for (module, dependencies) in declared {
            let root = Self.sourceDirectory(of: module)
            let files = try #require(FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil))
                .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }
            #expect(!files.isEmpty, "no sources under \(root.path)")
            for file in files {
                for line in try String(contentsOf: file, encoding: .utf8).split(separator: "\n") where line.contains("import ") {
                    guard let imported = line.wholeMatch(of: /\s*(?:@\w+ )*(?:public |package |internal )?import (\w+)(?:\.\w+)?/) else { continue }
                    let name = String(imported.1)
                    #expect(platform.contains(name) || dependencies.contains(name),
                            "\(module)/\(file.lastPathComponent) imports \(name), which Package.swift does not declare for \(module)")
                }
            }
        }
    }

    /// Tests mirror the layers (issue 58): a layer's test target declares, and so can import, nothing above the layer
    /// it tests; the build refuses the rest. The data plane's and the end-to-end tests may reach everything.
    @Test func eachLayersTestsReachNothingAboveIt() throws {
        let wire: Set<String> = ["GatehouseSyntax", "GatehouseVocabulary", "GatehouseHTTP"]
        let tokens: Set<String> = ["GatehouseSyntax", "GatehouseVocabulary", "GatehouseRules", "GatehouseConfig", "GatehouseTokens",
                                   "GatehouseTokenFixtures"]
        let ceilings: [String: Set<String>] = [
            "GatehouseWireTests": wire.union(["GatehouseTestSupport"]),
            "GatehouseRulesTests": ["GatehouseSyntax", "GatehouseRules", "GatehouseTestSupport"],
            "GatehouseTokenFixtures": tokens,
            "GatehouseTokensTests": tokens,
            "GatehouseAuthTests": tokens.union(["GatehousePolicy", "GatehouseTelemetry", "GatehouseAuth", "GatehouseTestSupport"]),
            "GatehouseExchangeTests": tokens.union(wire).union(["GatehousePolicy", "GatehouseExchange"]),
        ]
        let declared = try Self.declaredImports()
        for (target, ceiling) in ceilings {
            let gatehouse = try #require(declared[target], "\(target) is not in the manifest").filter { $0.hasPrefix("Gatehouse") }
            #expect(gatehouse.isSubset(of: ceiling), "\(target) reaches \(gatehouse.subtracting(ceiling).sorted())")
        }
    }

    /// Small files, one concept each: none of the sources over 450 lines (issue 45's bound, held by issue 58).
    @Test func noSourceFileIsOver450Lines() throws {
        let root = Self.repository.appendingPathComponent("Sources")
        let files = try #require(FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil))
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }
        #expect(files.count >= 100, "the sources were not found under \(root.path)")
        for file in files {
            let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).count
            #expect(lines <= 451, "\(file.path.dropFirst(Self.repository.path.count + 1)) has \(lines - 1) lines")
        }
    }

    @Test func theReadmesModuleGraphIsTheManifests() throws {
        let manifest = try Self.manifestGraph()
        #expect(manifest.count >= 4, "the manifest's targets were not found: \(manifest)")
        #expect(try Self.readmeGraph() == manifest)
    }

    /// The request core cannot reach the services, the doors or a client library even by accident: its dependency
    /// closure in the manifest (targets, and the products any of them declares) holds none of them. SwiftPM's
    /// explicit import check then refuses an import of one. One edge no manifest of ours can cut: on Linux, SwiftNIO's
    /// NIOHTTP1 (whose value types the core reads) depends on its `NIO` umbrella and so on NIOPosix; what keeps the
    /// core off NIOPosix is `everyImportIsADeclaredDirectDependency` and the no-I/O check below.
    @Test func theRequestCoresClosureHoldsNoServiceDoorOrClient() throws {
        let declared = try Self.declaredImports()
        var closure: Set<String> = []
        var pending = ["GatehouseExchange"]
        while let module = pending.popLast() {
            guard closure.insert(module).inserted else { continue }
            pending += declared[module, default: []]
        }
        #expect(closure.contains("GatehouseVocabulary") && closure.contains("GatehousePolicy"), "\(closure.sorted())")
        let unreachable: Set<String> = [
            "GatehouseAuth", "GatehouseTelemetry", "GatehouseProxy", "GatehouseExtAuthz", "Gatehouse", "GatehouseCLI",
            "NIOPosix", "NIOSSL", "NIOTLS", "NIOHTTP2", "AsyncHTTPClient", "PostgresNIO", "SQLiteNIO", "Prometheus", "Logging",
            "ServiceLifecycle",
        ]
        #expect(closure.isDisjoint(with: unreachable), "the core reaches \(closure.intersection(unreachable).sorted())")
    }

    /// The request core takes time, settings and verdicts in as values (issue 45): whatever the manifest lets it see,
    /// its sources import no I/O module and name no event loop, future or clock.
    @Test func theRequestCoreImportsNoIOAndReadsNoClock() throws {
        let allowed: Set<String> = [
            "Foundation", "NIOCore", "NIOHTTP1", "Atomics", "Crypto", "GatehouseSyntax", "GatehouseRules",
            "GatehouseHTTP", "GatehouseConfig", "GatehouseTokens", "GatehouseVocabulary", "GatehousePolicy",
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
