#if canImport(Glibc)
import Glibc
#endif
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Testing
import GatehouseExtAuthz

/// Helpers of the contract tests (docs/reference.md, issue 24.6): waiting on a condition, the real
/// `gatehouse` binary run with a configuration file the test controls (SIGHUP, SIGTERM, exit code),
/// the binary's other subcommands, a loopback port that never completes a TCP handshake, and
/// Prometheus text read into series.
enum Contract {
    /// Waits until `condition` holds, polling every 20 ms, for `timeout` at most; whether it held.
    static func eventually(timeout: Duration = .seconds(10), _ condition: () async throws -> Bool) async rethrows -> Bool {
        let deadline = ContinuousClock.now + timeout
        while true {
            if try await condition() { return true }
            if ContinuousClock.now >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    /// A scratch directory, removed by `remove()`.
    static func makeDirectory(_ label: String) throws -> String {
        let directory = NSTemporaryDirectory() + "gatehouse-\(label)-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory
    }

    /// The `[upstream]` and `[[provider]]` tables for a test upstream and JWKS server.
    static func toml(upstreamPort: Int, jwks: TestJWKSServer, extra: String = "") -> String {
        toml(upstreamPort: upstreamPort, jwksURI: jwks.jwksURL.absoluteString, extra: extra)
    }

    static func toml(upstreamPort: Int, jwksURI: String, extra: String = "") -> String {
        """
        [upstream]
        url = "http://127.0.0.1:\(upstreamPort)"
        [[provider]]
        name = "test"
        type = "jwks"
        issuer = "\(Claims.issuer)"
        jwks_uri = "\(jwksURI)"
        audiences = ["\(Claims.audience)"]
        \(extra)
        """
    }

    /// A JWKS server (EC key) and an upstream for a test that runs the binary, closed afterwards.
    static func withPeers(_ body: (TestJWKSServer, TestUpstream) async throws -> Void) async throws {
        let jwks = try await TestJWKSServer(jwks: TestSigner.jwks([.ec]))
        let upstream = try await TestUpstream()
        let outcome: Result<Void, any Error>
        do { outcome = .success(try await body(jwks, upstream)) } catch { outcome = .failure(error) }
        await jwks.close()
        await upstream.close()
        try outcome.get()
    }

    /// Runs the `gatehouse` binary to its end: exit code, standard output and standard error apart.
    /// `environment` is added to this process's (with `GATEHOUSE_CONFIG` always removed first);
    /// `directory` is its working directory; `standardInput` is fed to it.
    static func runCLI(
        _ arguments: [String], environment: [String: String] = [:], directory: String? = nil, standardInput: String? = nil
    ) async throws -> (exitCode: Int32, stdout: String, stderr: String) {
        let scratch = try makeDirectory("cli")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let errorPath = scratch + "/stderr"
        let inputPath = scratch + "/stdin"
        try (standardInput ?? "").write(toFile: inputPath, atomically: true, encoding: .utf8)
        var argv = ["/usr/bin/env", "-u", "GATEHOUSE_CONFIG"]
        if let directory { argv += ["-C", directory] }
        argv += environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        // The shell only redirects: standard error to its own file, standard input from the prepared one.
        argv = ["/bin/sh", "-c", "exec \"$@\" 2>\"$0\" <\"$GH_STDIN\"", errorPath] + argv + [ServedGatehouse.executable] + arguments
        argv = ["/usr/bin/env", "GH_STDIN=\(inputPath)"] + argv
        let (exitCode, stdout) = try await ChildProcess.runToEnd(argv, timeout: .seconds(30))
        let stderr = (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? ""
        return (exitCode, stdout, stderr)
    }
}

/// `gatehouse serve` as a child process, on free loopback ports, with a configuration file the test
/// may rewrite before a SIGHUP, optionally under a resource limit (`prefix`); its exit code is collected.
final class ServedGatehouse {
    let pid: pid_t
    let port: Int
    let adminPort: Int
    let directory: String
    let configPath: String
    let outputPath: String
    private var exitStatus: Int32?

    /// The executable next to this test bundle (built by `swift build --build-tests`).
    static var executable: String {
        Bundle.module.bundleURL.deletingLastPathComponent().appendingPathComponent("gatehouse").path
    }

    /// `toml` is everything but `[listen]` / `[admin]`; `listen` is appended to the `[listen]` table.
    /// `prefix` runs the binary under another program (e.g. `prlimit --nofile=256 --`).
    /// `executable`: another copy of the binary (one an unprivileged user can reach, say).
    init(toml: String, listen: String = "", prefix: [String] = [], waitUntilReady: Bool = true, executable: String = ServedGatehouse.executable)
        async throws
    {
        directory = try Contract.makeDirectory("served")
        configPath = directory + "/gatehouse.toml"
        outputPath = directory + "/output.log"
        // Free ports are picked before the child binds them: another helper may take one meanwhile
        // ("Address already in use"); then the start is tried again on other ports.
        var attempt = 0
        while true {
            attempt += 1
            let port = try await freeLoopbackPort()
            var adminPort = try await freeLoopbackPort()
            while adminPort == port { adminPort = try await freeLoopbackPort() }
            try Self.configuration(port: port, adminPort: adminPort, listen: listen, toml)
                .write(toFile: configPath, atomically: true, encoding: .utf8)
            let pid = try ChildProcess.spawn(prefix + [executable, "serve", "--config", configPath], outputPath: outputPath)
            let started = await Contract.eventually {
                if !waitUntilReady { return true }
                if (try? await Self.admin(adminPort, "/readyz").status) == 200 { return true }
                return waitpid(pid, nil, WNOHANG) == pid  // it exited
            }
            let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            let ready = waitUntilReady ? (try? await Self.admin(adminPort, "/readyz").status) == 200 : true
            if started && ready {
                (self.pid, self.port, self.adminPort) = (pid, port, adminPort)
                return
            }
            ChildProcess.stop(pid)
            if attempt < 3, output.contains("Address already in use") { continue }
            try? FileManager.default.removeItem(atPath: directory)
            throw ChildProcess.Failed(description: "gatehouse did not become ready: \(output)")
        }
    }

    static func admin(_ adminPort: Int, _ path: String) async throws -> (status: Int, body: String) {
        let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: "http://127.0.0.1:\(adminPort)\(path)"), timeout: .seconds(5))
        let body = try await response.body.collect(upTo: 1 << 20)
        return (Int(response.status.code), String(buffer: body))
    }

    static func configuration(port: Int, adminPort: Int, listen: String = "", _ toml: String) -> String {
        "[listen]\naddress = \"127.0.0.1:\(port)\"\n\(listen)\n[admin]\naddress = \"127.0.0.1:\(adminPort)\"\n" + toml
    }

    /// Replaces the configuration file (same ports) for the next SIGHUP.
    func rewrite(_ toml: String, listen: String = "") throws {
        try Self.configuration(port: port, adminPort: adminPort, listen: listen, toml).write(toFile: configPath, atomically: true, encoding: .utf8)
    }

    var output: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }

    /// How many lines of the output contain `text`.
    func lines(containing text: String) -> Int {
        output.split(separator: "\n").filter { $0.contains(text) }.count
    }

    func signal(_ signal: Int32) {
        guard exitStatus == nil else { return }
        kill(pid, signal)
    }

    /// SIGHUP, then waits until the reload it starts has been logged as applied (or refused).
    func hangUp() async throws {
        let before = lines(containing: "SIGHUP: ")
        signal(SIGHUP)
        let done = await Contract.eventually { self.lines(containing: "SIGHUP: ") > before }
        try #require(done, "no reload logged after SIGHUP: \(output)")
    }

    /// The exit code once the process has ended (-1 for a signal), or nil if it still runs after `timeout`.
    func exitCode(within timeout: Duration) async -> Int32? {
        if let exitStatus { return exitStatus }
        let deadline = ContinuousClock.now + timeout
        var status: Int32 = 0
        while ContinuousClock.now < deadline {
            let waited = waitpid(pid, &status, WNOHANG)
            if waited == pid {
                let code = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : -1
                exitStatus = code
                return code
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }

    func admin(_ path: String) async throws -> (status: Int, body: String) {
        try await Self.admin(adminPort, path)
    }

    func metrics() async throws -> MetricsText {
        MetricsText(try await admin("/metrics").body)
    }

    /// CPU time (user + system) the process has used so far.
    var cpuTime: Duration {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") else {
            return .zero
        }
        // Fields after "(comm)": state is field 3; utime and stime are fields 14 and 15.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Int(fields[11]), let system = Int(fields[12]) else { return .zero }
        return .milliseconds((user + system) * 1000 / max(sysconf(Int32(_SC_CLK_TCK)), 1))
    }

    /// Stops it if it still runs, and removes its directory.
    func stop() {
        if exitStatus == nil { ChildProcess.stop(pid) }
        exitStatus = exitStatus ?? -1
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// A loopback port whose accept queue is full: the kernel drops further SYNs, so a connection
/// attempt neither succeeds nor is refused — what a black-holed address does, without leaving 127.0.0.1.
final class SaturatedListener {
    let port: Int
    private let listener: Int32
    private let fillers: [Int32]

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Bool in
                bind(descriptor, pointer, length) == 0 && listen(descriptor, 0) == 0 && getsockname(descriptor, pointer, &length) == 0
            }
        }
        guard bound else {
            close(descriptor)
            throw ChildProcess.Failed(description: "cannot listen on loopback: errno \(errno)")
        }
        // Backlog 0 holds one established connection: fill it; it is never accepted.
        var fillers: [Int32] = []
        for _ in 0..<2 {
            let filler = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            var target = address
            _ = withUnsafePointer(to: &target) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(filler, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            fillers.append(filler)
        }
        listener = descriptor
        port = Int(UInt16(bigEndian: address.sin_port))
        self.fillers = fillers
    }

    /// Whether a fresh connection attempt is still pending after `wait` (the queue really is full).
    func dropsConnections(wait: Duration = .milliseconds(300)) -> Bool {
        let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(probe) }
        var timeout = timeval(tv_sec: 0, tv_usec: Int(wait.components.attoseconds / 1_000_000_000_000) + Int(wait.components.seconds) * 1_000_000)
        setsockopt(probe, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(probe, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        return result != 0 && (errno == EINPROGRESS || errno == EAGAIN || errno == ETIMEDOUT)
    }

    deinit {
        for filler in fillers { close(filler) }
        close(listener)
    }
}

/// Prometheus text exposition read into series: `name` plus its labels, whatever their order.
struct MetricsText {
    struct Series: Hashable, CustomStringConvertible {
        var name: String
        var labels: [String: String]
        var description: String {
            name + "{" + labels.sorted { $0.key < $1.key }.map { "\($0.key)=\"\($0.value)\"" }.joined(separator: ",") + "}"
        }
    }

    let text: String
    private(set) var values: [Series: Double] = [:]
    /// `# TYPE name kind`
    private(set) var types: [String: String] = [:]

    init(_ text: String) {
        self.text = text
        for line in text.split(separator: "\n") {
            if line.hasPrefix("# TYPE ") {
                let parts = line.split(separator: " ")
                if parts.count == 4 { types[String(parts[2])] = String(parts[3]) }
                continue
            }
            if line.hasPrefix("#") { continue }
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            let key = line[..<space]
            var labels: [String: String] = [:]
            let name: Substring
            if let brace = key.firstIndex(of: "{") {
                name = key[..<brace]
                let inner = key[key.index(after: brace)...].dropLast()  // without the closing brace
                for pair in inner.split(separator: ",") {
                    guard let equals = pair.firstIndex(of: "=") else { continue }
                    labels[String(pair[..<equals])] = String(pair[pair.index(after: equals)...].dropFirst().dropLast())
                }
            } else {
                name = key
            }
            values[Series(name: String(name), labels: labels)] = value
        }
    }

    func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        values[Series(name: name, labels: labels)]
    }

    func series(named name: String) -> [Series: Double] {
        values.filter { $0.key.name == name }
    }
}
