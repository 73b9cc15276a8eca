import AsyncHTTPClient
import Foundation
@testable import Gatehouse
import NIOCore
import NIOHTTP1
import Testing
import GatehouseSyntax

/// `gatehouse demo`, the README's first command, as a newcomer runs it: the binary on two free ports, its banner read
/// for the token, then the banner's own requests.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct DemoTests {
    @Test func theDemoServesWhatItsBannerSaysIdentityAssertionIncluded() async throws {
        let directory = try Contract.makeDirectory("demo")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let output = directory + "/output.log"
        func banner() -> String { (try? String(contentsOfFile: output, encoding: .utf8)) ?? "" }
        func get(_ url: String, token: String? = nil) async throws -> (status: Int, body: String) {
            var request = HTTPClientRequest(url: url)
            if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(5))
            return (Int(response.status.code), String(buffer: try await response.body.collect(upTo: 1 << 20)))
        }
        // Two free ports, as a newcomer would pick them; another suite may take one before the demo binds it (the
        // demo then says "cannot listen" and exits), so a start on a taken port is tried again with two others.
        var port = 0
        var adminPort = 0
        var pid: pid_t = 0
        defer { if pid > 0 { ChildProcess.stop(pid) } }
        var ready = false
        for _ in 0..<3 where !ready {
            if pid > 0 { ChildProcess.stop(pid) }  // a pid of 0 would signal the whole process group
            port = try await freeLoopbackPort()
            adminPort = try await freeLoopbackPort()
            while adminPort == port { adminPort = try await freeLoopbackPort() }
            pid = try ChildProcess.spawn(
                [ServedGatehouse.executable, "demo", "--port", String(port), "--admin-port", String(adminPort)], outputPath: output)
            // A first start of a fresh debug build (page cache cold, other suites busy) may take several seconds.
            _ = await Contract.eventually(timeout: .seconds(30)) {
                if banner().contains("cannot listen") { return true }
                guard banner().contains("TOKEN=") else { return false }
                ready = (try? await get("http://127.0.0.1:\(adminPort)/readyz").status) == 200
                return ready
            }
        }
        try #require(ready, "the demo did not start: \(banner())")
        let token = try #require(banner().split(separator: "\n").first { $0.contains("TOKEN=") }?
            .split(separator: "=", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) })
        let base = "http://127.0.0.1:\(port)"
        #expect(try await get(base + "/v1/orders").status == 401)
        let echoed = try await get(base + "/v1/orders", token: token)
        #expect(echoed.status == 200)
        let headers = try #require(try StrictJSON.parse(Array(echoed.body.utf8)).objectValue?["headers"]?.arrayValue, "\(echoed.body)")
        let assertion = try #require(headers.compactMap(\.arrayValue).first { $0.first == .string("X-Gatehouse-Assertion") }?.last?.stringValue)
        let keyID = try #require(banner().range(of: #"kid [A-Za-z0-9_-]{43}"#, options: .regularExpression).map { String(banner()[$0].dropFirst(4)) })
        let header = try #require(Base64URL.decode(Array(assertion.split(separator: ".")[0].utf8)).flatMap { try? StrictJSON.parse($0).objectValue })
        #expect(header["kid"] == .string(keyID) && header["alg"] == .string("ES256"), "\(header)")
        let jwks = try await get(base + "/.gatehouse/jwks.json")
        #expect(jwks.status == 200 && jwks.body.contains(keyID), "\(jwks.body)")
    }
}
