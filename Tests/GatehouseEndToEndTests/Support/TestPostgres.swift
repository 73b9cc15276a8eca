#if canImport(Glibc)
import Glibc
#endif
import Foundation
import NIOCore
import NIOPosix

/// A throw-away PostgreSQL cluster on a loopback port, from Debian's `postgresql` server binaries
/// (`.ci/run` installs them). As root, the server runs as the `postgres` user (it refuses root).
final class TestPostgres: Sendable {
    struct Unavailable: Error, CustomStringConvertible {
        var description: String
    }

    let directory: String
    let port: Int
    private let binDirectory: String

    /// `postgres://gatehouse@127.0.0.1:PORT/postgres?sslmode=disable` (trust authentication).
    var url: String { "postgres://gatehouse@127.0.0.1:\(port)/postgres?sslmode=disable" }

    private init(directory: String, port: Int, binDirectory: String) {
        self.directory = directory
        self.port = port
        self.binDirectory = binDirectory
    }

    /// Creates and starts a new cluster; `body` runs with it; the cluster is deleted afterwards.
    static func with<T: Sendable>(_ body: (TestPostgres) async throws -> T) async throws -> T {
        let binDirectory = try findBinaries()
        let directory = NSTemporaryDirectory() + "gatehouse-pg-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let postgres = TestPostgres(directory: directory, port: try await freePort(), binDirectory: binDirectory)
        defer {
            try? postgres.stop()
            try? FileManager.default.removeItem(atPath: directory)
        }
        if getuid() == 0 { try run("/bin/chown", ["-R", "postgres:postgres", directory], asPostgres: false) }
        try postgres.pg("initdb", ["-D", postgres.dataDirectory, "-U", "gatehouse", "-A", "trust", "-E", "UTF8", "--no-sync"])
        try postgres.start()
        return try await body(postgres)
    }

    private var dataDirectory: String { directory + "/data" }

    func start() throws {
        try pg("pg_ctl", [
            "-D", dataDirectory, "-l", directory + "/server.log", "-w", "-t", "30",
            "-o", "-p \(port) -k \(directory) -c listen_addresses=127.0.0.1 -c fsync=off", "start",
        ])
    }

    /// Fast shutdown: connected clients are disconnected at once.
    func stop() throws {
        try pg("pg_ctl", ["-D", dataDirectory, "-m", "fast", "-w", "-t", "30", "stop"])
    }

    private func pg(_ tool: String, _ arguments: [String]) throws {
        try Self.run(binDirectory + "/" + tool, arguments, asPostgres: getuid() == 0)
    }

    /// posix_spawn + waitpid: Foundation's `Process.waitUntilExit` never returns for `pg_ctl start`
    /// (the server it leaves running keeps Foundation's exit monitor waiting).
    private static func run(_ executable: String, _ arguments: [String], asPostgres: Bool) throws {
        let argv = asPostgres ? ["/usr/sbin/runuser", "-u", "postgres", "--", executable] + arguments : [executable] + arguments
        let outputPath = NSTemporaryDirectory() + "gatehouse-pg-output-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var cArguments = argv.map { strdup($0) } + [nil]
        defer { for pointer in cArguments { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, argv[0], &actions, nil, &cArguments, environ)
        guard spawned == 0 else { throw Unavailable(description: "cannot run \(argv[0]): errno \(spawned)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        let exitCode = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : -1
        guard exitCode == 0 else {
            let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            throw Unavailable(description: "\(executable) \(arguments.joined(separator: " ")) failed (\(exitCode)): \(text)")
        }
    }

    /// The newest `/usr/lib/postgresql/<version>/bin` with `pg_ctl` and `initdb`.
    private static func findBinaries() throws -> String {
        let root = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        let candidates = versions.compactMap { version -> (Int, String)? in
            guard let number = Int(version), FileManager.default.isExecutableFile(atPath: "\(root)/\(version)/bin/initdb") else { return nil }
            return (number, "\(root)/\(version)/bin")
        }
        guard let newest = candidates.max(by: { $0.0 < $1.0 }) else {
            throw Unavailable(description: "PostgreSQL server binaries not found under \(root): apt-get install postgresql (.ci/run does)")
        }
        return newest.1
    }

    private static func freePort() async throws -> Int {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: "127.0.0.1", port: 0).get()
        let port = channel.localAddress?.port ?? 0
        try await channel.close()
        return port
    }
}
