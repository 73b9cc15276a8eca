#if canImport(Glibc)
import Glibc
#endif
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// The real `gatehouse` executable (built beside this test bundle by `swift build --build-tests`),
/// run as a child process with a configuration file: for what only a process shows (resource limits,
/// signals, exit codes, standard error).
final class GatehouseProcess {
    let pid: pid_t
    let port: Int
    let adminPort: Int
    let outputPath: String
    let directory: String

    /// The executable next to this test bundle.
    static var executable: String {
        Bundle.module.bundleURL.deletingLastPathComponent().appendingPathComponent("gatehouse").path
    }

    /// Starts `gatehouse serve` on free loopback ports with `toml` (its `[listen]` and `[admin]` tables are
    /// written here: leave them out), behind `prefix` (e.g. `prlimit --nofile=256`), and waits until
    /// `/readyz` answers 200.
    init(toml: String, prefix: [String] = []) async throws {
        directory = NSTemporaryDirectory() + "gatehouse-process-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        port = try await freeLoopbackPort()
        adminPort = try await freeLoopbackPort()
        let configPath = directory + "/gatehouse.toml"
        let listen = "[listen]\naddress = \"127.0.0.1:\(port)\"\n[admin]\naddress = \"127.0.0.1:\(adminPort)\"\n"
        try (listen + toml).write(toFile: configPath, atomically: true, encoding: .utf8)
        outputPath = directory + "/output.log"
        pid = try ChildProcess.spawn(prefix + [Self.executable, "serve", "--config", configPath], outputPath: outputPath)
        for _ in 0..<500 {
            if (try? await admin("/readyz").status) == 200 { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        stop()
        throw ChildProcess.Failed(description: "gatehouse did not become ready: \(output)")
    }

    /// What it wrote to standard output and standard error so far.
    var output: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }

    /// CPU time (user + system) the process has used so far.
    var cpuTime: Duration {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return .zero }
        // Fields after "(comm)": state is field 3; utime and stime are fields 14 and 15.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Int(fields[11]), let system = Int(fields[12]) else { return .zero }
        let ticks = sysconf(Int32(_SC_CLK_TCK))
        return .milliseconds((user + system) * 1000 / max(ticks, 1))
    }

    func admin(_ path: String) async throws -> (status: Int, body: String) {
        let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: "http://127.0.0.1:\(adminPort)\(path)"), timeout: .seconds(5))
        let body = try await response.body.collect(upTo: 1 << 20)
        return (Int(response.status.code), String(buffer: body))
    }

    /// The value of a metric series (its full name with labels, as exposed), if present.
    func metric(_ series: String) async throws -> Double? {
        let text = try await admin("/metrics").body
        for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1))
        }
        return nil
    }

    func stop() {
        ChildProcess.stop(pid)
        try? FileManager.default.removeItem(atPath: directory)
    }
}
