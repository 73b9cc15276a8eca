#if canImport(Glibc)
import Glibc
#endif
import Foundation
import NIOCore
import NIOPosix

/// A real nginx (Debian's package; `.ci/run` installs it) running a server block from `deploy/`,
/// with its loopback addresses rewritten to the test's ports.
final class TestNginx: Sendable {
    let port: Int

    private init(port: Int) { self.port = port }

    /// Starts nginx with `serverFile`'s text after `replacements`, runs `body`, stops nginx.
    /// The port is found free, then given to nginx: a test running beside this one may take it in
    /// between, so nginx is only trusted once it answers a probe with this start's own token, and
    /// is started again on another port when it does not.
    static func with<T: Sendable>(
        serverFile: String, replacements: [(String, String)], _ body: (TestNginx) async throws -> T
    ) async throws -> T {
        guard let binary = ["/usr/sbin/nginx", "/usr/local/sbin/nginx"].first(where: FileManager.default.isExecutableFile) else {
            throw ChildProcess.Failed(description: "nginx not found: apt-get install nginx (.ci/run does)")
        }
        var lastError: (any Error)?
        for _ in 0..<3 {
            let port = try await freeLoopbackPort()
            let directory = NSTemporaryDirectory() + "gatehouse-nginx-" + UUID().uuidString
            try FileManager.default.createDirectory(atPath: directory + "/logs", withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let probe = UUID().uuidString
            try configuration(serverFile: serverFile, replacements: replacements, port: port, directory: directory, probe: probe)
                .write(toFile: directory + "/nginx.conf", atomically: true, encoding: .utf8)
            let pid = try ChildProcess.spawn(
                [binary, "-p", directory, "-c", directory + "/nginx.conf"], outputPath: directory + "/logs/stdout.log")
            defer { ChildProcess.stop(pid) }
            do {
                try await waitUntilAnswering(port: port, probe: probe, logs: directory + "/logs")
            } catch {
                lastError = error
                continue
            }
            return try await body(TestNginx(port: port))
        }
        throw lastError ?? ChildProcess.Failed(description: "nginx did not start")
    }

    private static func configuration(
        serverFile: String, replacements: [(String, String)], port: Int, directory: String, probe: String
    ) throws -> String {
        var server = try String(contentsOfFile: serverFile, encoding: .utf8)
        for (old, new) in replacements + [("listen 80;", "listen 127.0.0.1:\(port);")] {
            guard server.contains(old) else { throw ChildProcess.Failed(description: "\(serverFile) no longer contains \(old)") }
            server = server.replacingOccurrences(of: old, with: new)
        }
        return """
            \(getuid() == 0 ? "user root root;" : "")
            daemon off; master_process on; worker_processes 1;
            pid \(directory)/nginx.pid; error_log \(directory)/logs/error.log warn;
            events { worker_connections 256; }
            http {
                access_log off;
                client_body_temp_path \(directory)/client_body; proxy_temp_path \(directory)/proxy;
                fastcgi_temp_path \(directory)/fastcgi; uwsgi_temp_path \(directory)/uwsgi; scgi_temp_path \(directory)/scgi;
            \(server)
                server { listen 127.0.0.1:\(port); server_name nginx-probe.invalid; location / { return 200 "\(probe)"; } }
            }
            """
    }

    /// Until nginx answers the probe server with `probe` (so the listener on `port` is this nginx).
    private static func waitUntilAnswering(port: Int, probe: String, logs: String) async throws {
        for _ in 0..<200 {
            let answer = try? await PythonPeer.runCapturing(
                ["/usr/bin/env", "curl", "-s", "-m", "2", "-H", "Host: nginx-probe.invalid", "http://127.0.0.1:\(port)/"], anyExit: true)
            if answer == probe { return }
            try await Task.sleep(for: .milliseconds(25))
        }
        let errors = (try? String(contentsOfFile: logs + "/error.log", encoding: .utf8)) ?? ""
        let output = (try? String(contentsOfFile: logs + "/stdout.log", encoding: .utf8)) ?? ""
        throw ChildProcess.Failed(description: "nginx did not answer on 127.0.0.1:\(port): \(errors) \(output)")
    }
}
