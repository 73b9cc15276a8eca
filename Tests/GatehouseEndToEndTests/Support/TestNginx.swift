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
    static func with<T: Sendable>(
        serverFile: String, replacements: [(String, String)], _ body: (TestNginx) async throws -> T
    ) async throws -> T {
        guard let binary = ["/usr/sbin/nginx", "/usr/local/sbin/nginx"].first(where: FileManager.default.isExecutableFile) else {
            throw ChildProcess.Failed(description: "nginx not found: apt-get install nginx (.ci/run does)")
        }
        let port = try await freeLoopbackPort()
        let directory = NSTemporaryDirectory() + "gatehouse-nginx-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory + "/logs", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var server = try String(contentsOfFile: serverFile, encoding: .utf8)
        for (old, new) in replacements + [("listen 80;", "listen 127.0.0.1:\(port);")] {
            guard server.contains(old) else { throw ChildProcess.Failed(description: "\(serverFile) no longer contains \(old)") }
            server = server.replacingOccurrences(of: old, with: new)
        }
        let configuration = """
            \(getuid() == 0 ? "user root root;" : "")
            daemon off; master_process on; worker_processes 1;
            pid \(directory)/nginx.pid; error_log \(directory)/logs/error.log warn;
            events { worker_connections 256; }
            http {
                access_log off;
                client_body_temp_path \(directory)/client_body; proxy_temp_path \(directory)/proxy;
                fastcgi_temp_path \(directory)/fastcgi; uwsgi_temp_path \(directory)/uwsgi; scgi_temp_path \(directory)/scgi;
            \(server)
            }
            """
        try configuration.write(toFile: directory + "/nginx.conf", atomically: true, encoding: .utf8)
        let pid = try ChildProcess.spawn([binary, "-p", directory, "-c", directory + "/nginx.conf"], outputPath: directory + "/logs/stdout.log")
        defer {
            kill(pid, SIGTERM)
            ChildProcess.wait(pid)
        }
        try await waitUntilListening(port: port, logs: directory + "/logs")
        return try await body(TestNginx(port: port))
    }

    private static func waitUntilListening(port: Int, logs: String) async throws {
        for _ in 0..<200 {
            if let channel = try? await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: "127.0.0.1", port: port).get() {
                try? await channel.close()
                return
            }
            try await Task.sleep(for: .milliseconds(25))
        }
        let errors = (try? String(contentsOfFile: logs + "/error.log", encoding: .utf8)) ?? ""
        let output = (try? String(contentsOfFile: logs + "/stdout.log", encoding: .utf8)) ?? ""
        throw ChildProcess.Failed(description: "nginx did not start: \(errors) \(output)")
    }
}
