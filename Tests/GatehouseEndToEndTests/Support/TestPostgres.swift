import Foundation
import GatehouseAuth

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
        let postgres = TestPostgres(directory: directory, port: try await freeLoopbackPort(), binDirectory: binDirectory)
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

    /// Runs one SQL statement as the `gatehouse` role (`psql`, stopping at the first error): what another writer
    /// of the shared tables does behind a replica's back.
    func sql(_ statement: String) throws {
        try Self.run(binDirectory + "/psql", [
            "-h", "127.0.0.1", "-p", String(port), "-U", "gatehouse", "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-q", "-c", statement,
        ], asPostgres: false)
    }

    private func pg(_ tool: String, _ arguments: [String]) throws {
        try Self.run(binDirectory + "/" + tool, arguments, asPostgres: getuid() == 0)
    }

    private static func run(_ executable: String, _ arguments: [String], asPostgres: Bool) throws {
        let argv = asPostgres ? ["/usr/sbin/runuser", "-u", "postgres", "--", executable] + arguments : [executable] + arguments
        try ChildProcess.run(argv)
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
}
