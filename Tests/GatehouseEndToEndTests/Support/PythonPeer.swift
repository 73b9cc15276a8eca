#if canImport(Glibc)
import Glibc
#endif
import Foundation
@testable import Gatehouse
import Testing
import GatehouseSyntax

/// The Python programs the HTTP/2 and gRPC tests talk to Gatehouse with (grpcio and h2 from
/// PyPI, installed by scripts/test.sh): resources of this test target, run with `python3`.
enum PythonPeer {
    struct Failed: Error, CustomStringConvertible {
        var description: String
    }

    static func script(_ folder: String, _ name: String) throws -> String {
        let url = try #require(
            Bundle.module.url(forResource: name, withExtension: nil, subdirectory: folder),
            "\(folder)/\(name) is not among the test target's resources")
        return url.path
    }

    /// Starts a server script that binds a free loopback port and writes it to `--port-file`;
    /// its pid and port, once it has. Its output goes to a log file beside the port file.
    static func startServer(_ folder: String, _ name: String, _ arguments: [String], what: String) async throws -> (pid_t, Int) {
        let path = try script(folder, name)
        let portFile = NSTemporaryDirectory() + "gatehouse-peer-port-" + UUID().uuidString
        let logFile = portFile + ".log"
        let pid = try ChildProcess.spawn(["/usr/bin/env", "python3", path, "--port-file", portFile] + arguments, outputPath: logFile)
        defer { try? FileManager.default.removeItem(atPath: portFile) }
        for _ in 0..<500 {
            if let text = try? String(contentsOfFile: portFile, encoding: .utf8), let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
                // The log is read only when the start fails: unlinked now (the peer writes on into the open file), so
                // no run leaves one behind.
                try? FileManager.default.removeItem(atPath: logFile)
                return (pid, port)
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        ChildProcess.stop(pid, grace: .zero)
        throw Failed(description: "\(what) did not start: \((try? String(contentsOfFile: logFile, encoding: .utf8)) ?? "")")
    }

    /// Runs a script to its end and returns the JSON object it printed last on stdout.
    static func runJSON(_ folder: String, _ name: String, _ arguments: [String]) async throws -> [String: JSONValue] {
        let path = try script(folder, name)
        let output = try await runCapturing(["/usr/bin/env", "python3", path] + arguments)
        let line = output.split(separator: "\n").last { $0.hasPrefix("{") }
        guard let line, let object = try? StrictJSON.parse(Array(line.utf8), maxDepth: 64).objectValue else {
            throw Failed(description: "\(name) \(arguments.joined(separator: " ")) printed no JSON object: \(output)")
        }
        return object
    }

    /// Runs to completion and returns stdout+stderr; throws unless it exits 0 (or at all, when `anyExit`).
    static func runCapturing(_ argv: [String], anyExit: Bool = false) async throws -> String {
        let (exitCode, text) = try await ChildProcess.runToEnd(argv)
        guard exitCode == 0 || anyExit else { throw Failed(description: "\(argv.joined(separator: " ")) failed (\(exitCode)): \(text)") }
        return text
    }
}

/// The gRPC echo server (`Resources/grpc/echo_server.py`) on a free loopback port.
final class TestGRPCServer: Sendable {
    let port: Int
    private let pid: pid_t

    init() async throws {
        (pid, port) = try await PythonPeer.startServer("grpc", "echo_server.py", [], what: "the gRPC echo server (is grpcio installed? scripts/test.sh installs it)")
    }

    func close() {
        ChildProcess.stop(pid)
    }

    /// Starts the server, runs `body`, and stops the server whatever happens.
    static func with<T: Sendable>(_ body: (TestGRPCServer) async throws -> T) async throws -> T {
        let server = try await TestGRPCServer()
        defer { server.close() }
        return try await body(server)
    }
}

/// One call made by `Resources/grpc/grpc_client.py`, as it reported it.
struct GRPCCallResult: Sendable {
    let object: [String: JSONValue]

    var code: String? { object["code"]?.stringValue }
    var details: String? { object["details"]?.stringValue }
    var responses: [String] { object["responses"]?.arrayValue?.compactMap(\.stringValue) ?? [] }
    var initialMetadata: [(String, String)] { pairs("initial_metadata") }
    var trailingMetadata: [(String, String)] { pairs("trailing_metadata") }

    func initial(_ name: String) -> String? { initialMetadata.first { $0.0 == name }?.1 }
    func trailing(_ name: String) -> String? { trailingMetadata.first { $0.0 == name }?.1 }

    private func pairs(_ key: String) -> [(String, String)] {
        (object[key]?.arrayValue ?? []).compactMap { pair in
            guard let items = pair.arrayValue, items.count == 2, let name = items[0].stringValue, let value = items[1].stringValue else {
                return nil
            }
            return (name, value)
        }
    }

    /// The metadata the echo server saw, from a JSON response that carries it.
    static func echoedMetadata(_ response: String) -> [(String, String)] {
        guard let object = try? StrictJSON.parse(Array(response.utf8), maxDepth: 16).objectValue else { return [] }
        return GRPCCallResult(object: ["initial_metadata": object["metadata"] ?? .array([])]).initialMetadata
    }

    static func call(
        port: Int, _ call: String, token: String? = nil, metadata: [(String, String)] = [], options: [String] = []
    ) async throws -> GRPCCallResult {
        var arguments = ["--target", "127.0.0.1:\(port)", call]
        if let token { arguments += ["--token", token] }
        for (name, value) in metadata { arguments += ["--metadata", "\(name)=\(value)"] }
        return GRPCCallResult(object: try await PythonPeer.runJSON("grpc", "grpc_client.py", arguments + options))
    }
}
